"""L-BFGS, ported from PyTorch's (including its strong-Wolfe line search).

Unlike the other optimizers, L-BFGS decides what to do next from the loss and from dot products of whole
gradients, so each inner iteration reads a few scalars back to the host (as PyTorch does with its ``float``
and comparisons of 0-d tensors). The vectors themselves stay on the parameters' device.
"""
from __future__ import annotations

from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.creation import zeros
from ..ops.joins import cat
from .optimizer import Optimizer, check


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along ``d`` for a step ``t`` satisfying the strong Wolfe conditions."""
    d_norm = float(d.abs().max())
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    # bracketing phase: find an interval containing acceptable steps
    while ls_iter < max_ls:
        sufficient = not (f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev))
        if sufficient and abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, bracket_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if not sufficient or gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g, bracket_gtd = [0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    return _zoom(obj_func, x, d, f, gtd, d_norm, c1, c2, tolerance_change, max_ls, ls_iter, evals, done,
                 (bracket, bracket_f, bracket_g, bracket_gtd))


def _zoom(obj_func, x, d, f, gtd, d_norm, c1, c2, tolerance_change, max_ls, ls_iter, evals, done, brackets):
    """The zoom phase of the line search: shrink the bracket until a step satisfies the conditions."""
    bracket, bracket_f, bracket_g, bracket_gtd = brackets
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # keep the trial step away from the bracket's ends, so the bracket really shrinks
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.clone(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
            continue
        if abs(gtd_new) <= -c2 * gtd:
            done = True
        elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
            bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
            bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
        bracket[low_pos], bracket_f[low_pos] = t, f_new
        bracket_g[low_pos], bracket_gtd[low_pos] = g_new.clone(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], evals


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
    history_size=100, line_search_fn=None)``; ``step(closure)`` needs the closure."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None) -> None:
        check(0.0 <= lr, f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        return cat([zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None else p.grad.reshape(-1)
                    for p in self._params], 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure):
        """Up to ``max_iter`` L-BFGS iterations; ``closure`` clears the gradients, computes the loss, calls
        ``backward`` and returns the loss."""
        self._opt_called = True
        with no_grad():
            return self._step(closure)

    def _closure(self, closure):
        with enable_grad():
            return closure()

    def _direction(self, state, flat_grad, history_size):
        """Update the curvature history with the last step, then the two-loop recursion gives -H g."""
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(state["t"])
        ys = float(y.dot(s))
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / float(y.dot(y))
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = float(old_stps[i].dot(q)) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q.mul(state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = float(old_dirs[i].dot(r)) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = self._closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().max()) <= tolerance_grad:
            return orig_loss
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(state, flat_grad, group["history_size"])
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            state["prev_loss"] = prev_loss = loss
            t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr if state["n_iter"] == 1 else lr
            state["d"], state["t"] = d, t
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:
                break
            loss, flat_grad, t, evals, opt_cond = self._move(closure, group, d, t, loss, flat_grad, gtd,
                                                             n_iter, current_evals)
            state["t"] = t
            current_evals += evals
            state["func_evals"] += evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or float(d.mul(t).abs().max()) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        return orig_loss

    def _move(self, closure, group, d, t, loss, flat_grad, gtd, n_iter, current_evals):
        """Step along ``d``: by the line search's step, or by ``t`` (then re-evaluate unless it is the last
        iteration). Returns (loss, flat_grad, t, evaluations, optimality reached)."""
        opt_cond, evals = False, 0
        line_search_fn = group["line_search_fn"]
        if line_search_fn is not None:
            if line_search_fn != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            x_init = [p.clone() for p in self._params]

            def obj_func(x, step, direction):
                return self._directional_evaluate(lambda: self._closure(closure), x, step, direction)

            loss, flat_grad, t, evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                      max_ls=group["max_eval"] - current_evals)
            self._add_grad(t, d)
            opt_cond = float(flat_grad.abs().max()) <= group["tolerance_grad"]
        else:
            self._add_grad(t, d)
            if n_iter != group["max_iter"]:
                loss = float(self._closure(closure))
                flat_grad = self._gather_flat_grad()
                opt_cond = float(flat_grad.abs().max()) <= group["tolerance_grad"]
                evals = 1
        return loss, flat_grad, t, evals, opt_cond

"""Optimal boundary value problem (OBVP) of the double integrator, batched.

Moving from state ``(p1, v1)`` to ``(p2, v2)`` in time ``T`` with minimum ``integral |a|^2 dt``
gives a cubic position per axis (acceleration linear in time). With ``dp = p2 - p1`` the cost of
that cubic, plus the time weight ``rho * T``, is

    J(T) = rho*T + C/T - B/T^2 + A/T^3,
    A = 12 |dp|^2,  B = 12 dp.(v1 + v2),  C = 4 (|v1|^2 + v1.v2 + |v2|^2),

and dJ/dT = 0  <=>  rho*T^4 - C*T^2 + 2*B*T - 3*A = 0 (a quartic). The minimum of J over
``T >= T_lower`` lies at ``T_lower`` or at a real root of the quartic above ``T_lower``; taking
both into account keeps the heuristic finite when the speed bound pushes ``T_lower`` past every
root (where Fast-Planner's version returns infinity and stalls at low speed limits).
"""
from __future__ import annotations

import numpy as np

_MIN_TIME = 1e-6


def _cost_terms(dp, v1, v2):
    """The (K,) coefficients A, B, C of J(T) above."""
    A = 12.0 * np.einsum('ij,ij->i', dp, dp)
    B = 12.0 * np.einsum('ij,ij->i', dp, v1 + v2)
    C = 4.0 * (np.einsum('ij,ij->i', v1, v1) + np.einsum('ij,ij->i', v1, v2)
               + np.einsum('ij,ij->i', v2, v2))
    return A, B, C


def obvp_cost(T, dp, v1, v2, rho: float) -> np.ndarray:
    """``J(T)`` for batches: ``T`` (K,) or (K, m); ``dp``, ``v1``, ``v2`` (K, ndim)."""
    dp, v1, v2 = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (dp, v1, v2))
    A, B, C = _cost_terms(dp, v1, np.broadcast_to(v2, dp.shape))
    T = np.asarray(T, dtype=float)
    if T.ndim == 2:
        A, B, C = A[:, None], B[:, None], C[:, None]
    inv = 1.0 / T
    return rho * T + inv * (C + inv * (-B + inv * A))


def obvp_min_cost(dp, v1, v2, rho: float, t_lower):
    """Minimum over ``T >= t_lower`` of ``J(T)`` and the minimising ``T``, for K pairs at once.

    ``dp``, ``v1``, ``v2``: (K, ndim); ``t_lower``: (K,) or scalar; ``rho > 0``.
    The quartic's roots of all pairs come from one batched companion-matrix eigenvalue call.
    """
    dp = np.asarray(dp, dtype=float)
    v1 = np.asarray(v1, dtype=float)
    v2 = np.broadcast_to(np.asarray(v2, dtype=float), dp.shape)
    K = dp.shape[0]
    t_low = np.maximum(np.broadcast_to(np.asarray(t_lower, dtype=float), (K,)), _MIN_TIME)
    A, B, C = _cost_terms(dp, v1, v2)
    # Companion matrix of T^4 + 0 T^3 - (C/rho) T^2 + (2B/rho) T - 3A/rho.
    comp = np.zeros((K, 4, 4))
    comp[:, 1, 0] = comp[:, 2, 1] = comp[:, 3, 2] = 1.0
    comp[:, 0, 1] = C / rho
    comp[:, 0, 2] = -2.0 * B / rho
    comp[:, 0, 3] = 3.0 * A / rho
    roots = np.linalg.eigvals(comp)
    real = roots.real
    usable = (np.abs(roots.imag) <= 1e-7 * np.maximum(1.0, np.abs(real))) & (real > t_low[:, None])
    candidates = np.concatenate([np.where(usable, real, t_low[:, None]), t_low[:, None]], axis=1)
    inv = 1.0 / candidates
    costs = rho * candidates + inv * (C[:, None] + inv * (-B[:, None] + inv * A[:, None]))
    best = np.argmin(costs, axis=1)
    rows = np.arange(K)
    return costs[rows, best], candidates[rows, best]


def cubic_coefficients(p1, v1, p2, v2, T) -> np.ndarray:
    """Minimum-energy cubic from ``(p1, v1)`` to ``(p2, v2)`` in time ``T``.

    ``p1, v1, p2, v2``: (ndim,); ``T``: (m,) durations. Returns (m, 4, ndim) coefficients of
    ``p(t) = c0 + c1 t + c2 t^2 + c3 t^3``.
    """
    T = np.asarray(T, dtype=float).reshape(-1, 1)
    dp = p2 - p1 - v1 * T                 # (m, ndim): displacement left after coasting
    dv = v2 - v1
    coef = np.empty((T.shape[0], 4, np.shape(p1)[-1]))
    coef[:, 0] = p1
    coef[:, 1] = v1
    coef[:, 2] = (3.0 * dp - dv * T) / T ** 2
    coef[:, 3] = (-2.0 * dp + dv * T) / T ** 3
    return coef

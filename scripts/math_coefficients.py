#!/usr/bin/env python3
"""Derives every constant of determinism/include/samebits/det/math.hpp (see docs/MATH.md).

Each polynomial is the minimax fit (Remez exchange, relative error, mpmath at 60 digits) of the
function named below on the interval its range reduction leaves; the coefficients are printed as
C++ hex literals, rounded once to the precision the code evaluates them in.
Needs: pip install mpmath.
Usage: python3 scripts/math_coefficients.py   (prints the constants and each fit's error bound)
"""
import mpmath
from mpmath import mp, mpf

mp.dps = 60


def remez(g, a, b, n, iters=40, grid=3000):
    """Degree-n polynomial minimizing max |(P(t) - g(t)) / g(t)| on [a, b]; returns (coefs, err)."""
    a, b = mpf(a), mpf(b)
    m = n + 2
    ref = [(a + b) / 2 - (b - a) / 2 * mpmath.cos(mp.pi * j / (m - 1)) for j in range(m)]
    pts = [a + (b - a) * mpf(i) / grid for i in range(grid + 1)]
    gp = [g(t) for t in pts]
    for _ in range(iters):
        A = mpmath.matrix(m, m)
        rhs = mpmath.matrix(m, 1)
        for j, t in enumerate(ref):
            for i in range(n + 1):
                A[j, i] = t**i
            gt = g(t)
            A[j, n + 1] = (-1) ** j * abs(gt)
            rhs[j] = gt
        sol = mpmath.lu_solve(A, rhs)
        c = [sol[i] for i in range(n + 1)]
        ev = [(mpmath.polyval(c[::-1], t) - gt) / abs(gt) for t, gt in zip(pts, gp)]
        ext = []
        for i, v in enumerate(ev):
            left = ev[i - 1] if i > 0 else None
            right = ev[i + 1] if i + 1 < len(ev) else None
            if (left is None or abs(v) > abs(left)) and (right is None or abs(v) >= abs(right)):
                ext.append((pts[i], v))
        merged = []
        for t, v in ext:
            if merged and (merged[-1][1] > 0) == (v > 0):
                if abs(v) > abs(merged[-1][1]):
                    merged[-1] = (t, v)
            else:
                merged.append((t, v))
        while len(merged) > m:
            merged.pop(0 if abs(merged[0][1]) < abs(merged[-1][1]) else -1)
        if len(merged) < m:
            break
        ref = [t for t, _ in merged]
        maxe = max(abs(v) for v in ev)
        if maxe / abs(sol[n + 1]) - 1 < mpf("1e-4"):
            break
    return c, max(abs(v) for v in ev)


def hexf(v, bits):
    """A C++ hex literal of v rounded to nearest float (bits=24) or double (bits=53)."""
    v = mpf(v)
    if v == 0:
        return "0x0p+0" + ("f" if bits == 24 else "")
    s = "-" if v < 0 else ""
    v = abs(v)
    e = int(mpmath.floor(mpmath.log(v, 2)))
    if mpf(2) ** e > v:
        e -= 1
    if mpf(2) ** (e + 1) <= v:
        e += 1
    mant = int(mpmath.nint(v / mpf(2) ** (e - bits + 1)))
    if mant == 2**bits:
        mant //= 2
        e += 1
    frac = mant - 2 ** (bits - 1)
    width = (bits - 1 + 3) // 4
    frac <<= width * 4 - (bits - 1)
    return f"{s}0x1.{frac:0{width}x}p{e:+d}" + ("f" if bits == 24 else "")


def rounded(v, bits):
    return mpf(float.fromhex(hexf(v, bits).rstrip("f")))


def limit(expr, at_zero):
    return lambda t: at_zero(t) if abs(t) < mpf("1e-25") else expr(t)


def fit(name, g, a, b, n, bits, var):
    c, err = remez(g, a, b, n)
    log2err = float(mpmath.log(err, 2))
    print(f"// {name}: degree {n} in {var} on [{float(a):.6g}, {float(b):.6g}], "
          f"max relative error 2^{log2err:.1f}")
    for i, ci in enumerate(c):
        print(f"//   c{i} = {hexf(ci, bits)}")
    return c


def main():
    sq = mpmath.sqrt
    exp_p = limit(lambda r: (mpmath.exp(r) - 1 - r) / r**2, lambda r: mpf(1) / 2 + r / 6)
    tanh_p = limit(lambda u: (mpmath.tanh(sq(u)) - sq(u)) / sq(u) ** 3,
                   lambda u: -mpf(1) / 3 + 2 * u / 15)
    log_l = limit(lambda z: mpmath.atanh(sq(z)) / sq(z), lambda z: 1 + z / 3)
    erf_e = limit(lambda u: mpmath.erf(sq(u)) / sq(u), lambda u: 2 / sq(mp.pi) * (1 - u / 3))
    erfc_g = lambda t: mpmath.erfc(t + mpf(5) / 2) * mpmath.exp((t + mpf(5) / 2) ** 2)
    sin_s = limit(lambda u: (mpmath.sin(sq(u)) - sq(u)) / sq(u) ** 3,
                  lambda u: -mpf(1) / 6 + u / 120)
    cos_c = limit(lambda u: (mpmath.cos(sq(u)) - 1) / u, lambda u: -mpf(1) / 2 + u / 24)
    print("// ---- fp32 kernels (coefficients rounded to float) ----")
    fit("exp_f32 P(r) = (e^r - 1 - r)/r^2", exp_p, -0.3467, 0.3467, 5, 24, "r")
    fit("tanh_f32 P(u) = (tanh x - x)/x^3, u = x^2", tanh_p, 0, mpf(0.875) ** 2, 7, 24, "u")
    print("// ---- fp64 kernels (coefficients rounded to double) ----")
    fit("exp_f64 P(r) = (e^r - 1 - r)/r^2", exp_p, -0.3467, 0.3467, 6, 53, "r")
    fit("log L(z) = atanh(s)/s, z = s^2", log_l, 0, mpf(0.02944), 5, 53, "z")
    fit("erf E(u) = erf(x)/x, u = x^2", erf_e, 0, 1, 8, 53, "u")
    fit("erfc G(t) = erfc(x) e^(x^2), t = x - 2.5", erfc_g, -1.5, 1.42, 12, 53, "t")
    fit("sin S(u) = (sin r - r)/r^3, u = r^2", sin_s, 0, mpf(0.786) ** 2, 4, 53, "u")
    fit("cos C(u) = (cos r - 1)/r^2, u = r^2", cos_c, 0, mpf(0.786) ** 2, 4, 53, "u")

    print("// ---- constants ----")
    ln2 = mpmath.log(2)
    ln2_hi = rounded(ln2, 24)
    print(f"// log2(e) as float: {hexf(1 / ln2, 24)}; ln2_hi = {hexf(ln2, 24)}; "
          f"ln2_lo = {hexf(ln2 - ln2_hi, 24)}")
    d_hi = rounded(ln2, 53)
    print(f"// log2(e) as double: {hexf(1 / ln2, 53)}; ln2 = {hexf(ln2, 53)}; "
          f"ln2_lo = {hexf(ln2 - d_hi, 53)}")
    pio2 = mp.pi / 2
    p1 = mpmath.floor(pio2 * 2**31) / 2**31  # 32 significant bits
    p2 = mpmath.floor((pio2 - p1) * 2**63) / 2**63  # the next 32 bits
    p3 = pio2 - p1 - p2
    print(f"// 2/pi = {hexf(2 / mp.pi, 53)}; pi/2 = {hexf(pio2, 53)}; "
          f"pi/2 * 2^-64 = {hexf(pio2 / 2**64, 53)}")
    print(f"// pi/2 in three pieces: {hexf(p1, 53)}, {hexf(p2, 53)}, {hexf(p3, 53)}")
    words = []
    mp.dps = 120
    frac = 2 / mp.pi
    for _ in range(8):
        frac *= 2**32
        w = int(mpmath.floor(frac))
        frac -= w
        words.append(f"0x{w:08X}u")
    print("// bits of 2/pi, 32 per word: " + ", ".join(words))
    mp.dps = 60
    xs = mpmath.findroot(lambda x: mpmath.erfc(x) - mpf(2) ** -25, 3.9)
    print(f"// erf(x) rounds to 1 in float from x = {mpmath.nstr(xs, 12)}")


if __name__ == "__main__":
    main()

// The Newton–Schulz coefficient tables of Muon, by name: one quintic (a, b, c) per iteration,
// X ← a·X + b·(XXᵀ)X + c·(XXᵀ)²X. Pure data and its selection; the arithmetic is in
// ops/muon.hpp and optim/muon.hpp. Each triple is used as fp32 (a_f = fl32(a), …).
#pragma once
#include <array>
#include <vector>

#include "samebits/core/config.hpp"

namespace sb {

struct NsStep {
  double a, b, c;
};

// Keller Jordan's quintic (Muon, 2024): the same triple every iteration. It does not converge to
// the polar factor; its fixed point oscillates, leaving singular values in about [0.7, 1.2].
inline constexpr NsStep kKellerNs{3.4445, -4.7750, 2.0315};

// Polar Express (Amsel, Persson, Musco & Gower 2025, "The Polar Express: Optimal Matrix Sign
// Methods and Their Application to the Muon Algorithm", arXiv:2505.16932, Algorithm 1, degree 5):
// the published per-step triples with its safety factor applied to all but the last,
// (a/1.01, b/1.01**3, c/1.01**5) as Python computes them; steps beyond the table repeat the last
// triple (1.875, −1.25, 0.375), as the paper's code does.
inline constexpr std::array<NsStep, 8> kPolarExpressNs{{
    {8.205160414005574, -22.90193498705605, 16.460724910180314},
    {4.066395159942775, -2.8611540867551426, 0.5183995226694741},
    {3.9095949044379155, -2.823351735039516, 0.5250369769390025},
    {3.2855640171986153, -2.415301959635945, 0.48529406552790866},
    {2.277873287083977, -1.619821765265441, 0.39848078704168355},
    {1.8725756512746514, -1.2307042574884297, 0.35851616209511666},
    {1.856437109755889, -1.2132392819185351, 0.35679978941375945},
    {1.875, -1.25, 0.375},
}};

// The ns_steps triples of a config, in iteration order: keller repeated; polar_express from its
// table; custom from ns_custom, either one triple (a, b, c) used every step or exactly one triple
// per step (3·ns_steps values). Throws sb::Error on a bad ns_steps or ns_custom length.
std::vector<NsStep> ns_schedule(const OptimConfig& config);

}  // namespace sb

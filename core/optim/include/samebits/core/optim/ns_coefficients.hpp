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

// Polar Express as NVIDIA Emerging-Optimizers ships it (muon_utils.py, coefficient_type
// "polar_express"): the 8 triples of kPolarExpressNs rounded to 4 decimals; it needs at least 8
// iterations and repeats the last triple beyond them (optim.ns_coefficients = polar_express_8).
inline constexpr std::array<NsStep, 8> kPolarExpress8Ns{{
    {8.2051, -22.9019, 16.4607},
    {4.0664, -2.8612, 0.5184},
    {3.9096, -2.8234, 0.5250},
    {3.2856, -2.4153, 0.4853},
    {2.2779, -1.6198, 0.3985},
    {1.8726, -1.2307, 0.3585},
    {1.8564, -1.2132, 0.3568},
    {1.8750, -1.2500, 0.3750},
}};

// Polar Express computed for exactly 5 iterations (safety factor 2e-2, cushion 2), the table of
// modded-nanogpt's speedrun (train_gpt.py, polar_express_coeffs); iterations beyond 5 repeat the
// last triple (optim.ns_coefficients = polar_express_5).
inline constexpr std::array<NsStep, 5> kPolarExpress5Ns{{
    {8.156554524902461, -22.48329292557795, 15.878769915207462},
    {4.042929935166739, -2.808917465908714, 0.5000178451051316},
    {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
    {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
    {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
}};

// Emerging-Optimizers' default "quintic" table (per-step quintics optimised by F. L. Cesista,
// leloykun.github.io/ponder/muon-opt-coeffs, as in modded-nanogpt's train_gpt_medium.py): 5 triples cycled, so ns_steps
// is a multiple of 5 (optim.ns_coefficients = quintic).
inline constexpr std::array<NsStep, 5> kQuinticNs{{
    {4.0848, -6.8946, 2.9270},
    {3.9505, -6.3029, 2.6377},
    {3.7418, -5.5913, 2.3037},
    {2.8769, -3.1427, 1.2046},
    {2.8366, -3.0525, 1.2012},
}};

// The ns_steps triples of a config, in iteration order: keller repeated; polar_express from its
// table; polar_express_8 and polar_express_5 from theirs, the last triple repeated; quintic cycled;
// custom from ns_custom, either one triple (a, b, c) used every step or exactly one triple per step
// (3·ns_steps values). Throws sb::Error on a bad ns_steps or ns_custom length.
std::vector<NsStep> ns_schedule(const OptimConfig& config);

}  // namespace sb

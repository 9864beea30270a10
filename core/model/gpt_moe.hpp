// GPT::MoeLayer (internal to core/model): a Mixture-of-Experts block's tensors, one activation
// slot's buffers, and that slot's routing, kept from the forward to the backward.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/model/gpt.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

struct GPT::MoeLayer {
  struct Expert {  // shared experts first, then the routed ones (gpt_shape.hpp's order)
    const float *fcw, *fcb, *projw, *projb;
    float *dfcw, *dfcb, *dprojw, *dprojb;
  };
  const float* router_w = nullptr;  // (E, C)
  float* drouter_w = nullptr;
  std::vector<Expert> experts;  // (S + E), sized before its gradient pointers are bound
  // This slot's buffers (backend memory): R ≤ N·J rows, J = S + k slots a token.
  Tensor logits;                 // (N, E)
  Tensor xe;                     // (R, C) the experts' input rows
  Tensor h;                      // (R, blocks·Fe) the experts' fc outputs
  Tensor act;                    // (R, Fe) their activations
  Tensor y;                      // (R, C) the experts' outputs
  Tensor token;                  // (R) i32: a row's token
  Tensor rows;                   // (N, J) i32: a token's rows in ascending expert index, −1 when dropped
  Tensor gates;                  // (N, J)
  const float* input = nullptr;  // the last forward's x (N, C), backend memory
  // Expert parallelism (gpt_moe_ep.cpp), this slot's: the rows this rank's experts receive from
  // each source rank (≤ ranks·N·k), their fc outputs, activations and outputs; the rows received
  // from each source for each of this rank's experts (ranks, experts a rank); the rows sent to and
  // received from each rank (ranks); each source's traced leaf (ranks).
  Tensor ep_x, ep_h, ep_act, ep_y;
  std::vector<int64_t> got;
  std::vector<size_t> send_rows, recv_rows;
  std::vector<int64_t> source_leaf;
  // This slot's routing (host).
  std::vector<float> scores;        // (N, E)
  std::vector<int32_t> chosen;      // (N, k) ascending expert index
  std::vector<float> chosen_gates;  // (N, k)
  std::vector<int64_t> first;       // (S + E + 1) an expert's first row
  std::vector<int64_t> counts;      // (E) the leaf's selections of each routed expert
  int R = 0;                        // rows in use
  double aux_loss = 0.0;            // the leaf's load-balancing loss (with its coefficient)
  det::ExactSum entropy;            // the leaf's tokens' router entropies, summed exactly
};

}  // namespace sb

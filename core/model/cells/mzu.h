// Multi-Zone Unit (Meng, Zhang, Liu, Zhou, AAAI 2020): sat_mzu, gcn_mzu, cap_mzu,
// with deep transition (+DT), zone disagreement regularisation and the Table 4
// ablations. Equations are cited as "eq. N" of the paper; the choices the paper
// leaves open are documented in cells/MZU_NOTES.md (and are options).
//
// Batching: the M-functions of one depth (M_h and M_g, K <= 2 of them) are stored
// as stacked parameters with a leading K dimension, so every stage of both runs as
// one batched matrix product (bmm/baddbmm) over (K, batch, zones); there is no C++
// loop over zones, capsules or M-functions. Zone generation's input half is hoisted
// out of the time loop (input_projection) for the whole sequence.
#pragma once
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

// The choices of the MZU options, each with its names (config/option_spec.h, EnumNames): the
// tables' order is the order the schema lists them.
enum class MZUComposition { Sat, Gcn, Cap };  // sat_mzu (eq. 6), gcn_mzu (eqs. 7-9), cap_mzu (eqs. 10-14)
constexpr EnumNames<MZUComposition, 3> enum_names(MZUComposition) {
  return {{{MZUComposition::Sat, "sat"}, {MZUComposition::Gcn, "gcn"}, {MZUComposition::Cap, "cap"}}};
}
enum class DisagreementScale { Mean, Sum };
constexpr EnumNames<DisagreementScale, 2> enum_names(DisagreementScale) {
  return {{{DisagreementScale::Mean, "mean"}, {DisagreementScale::Sum, "sum"}}};
}
enum class DisagreementPairs { All, Distinct };
constexpr EnumNames<DisagreementPairs, 2> enum_names(DisagreementPairs) {
  return {{{DisagreementPairs::All, "all"}, {DisagreementPairs::Distinct, "distinct"}}};
}
enum class DisagreementForm { Cosine, SquaredCosine };
constexpr EnumNames<DisagreementForm, 2> enum_names(DisagreementForm) {
  return {{{DisagreementForm::Cosine, "cosine"}, {DisagreementForm::SquaredCosine, "squared_cosine"}}};
}
enum class LnPosition { Preact, Zones };
constexpr EnumNames<LnPosition, 2> enum_names(LnPosition) {
  return {{{LnPosition::Preact, "preact"}, {LnPosition::Zones, "zones"}}};
}
enum class GcnActivation { Relu, Tanh, Sigmoid, Identity };
constexpr EnumNames<GcnActivation, 4> enum_names(GcnActivation) {
  return {{{GcnActivation::Relu, "relu"},
           {GcnActivation::Tanh, "tanh"},
           {GcnActivation::Sigmoid, "sigmoid"},
           {GcnActivation::Identity, "identity"}}};
}
enum class GcnEdges { Cosine, ReluCosine };
constexpr EnumNames<GcnEdges, 2> enum_names(GcnEdges) {
  return {{{GcnEdges::Cosine, "cosine"}, {GcnEdges::ReluCosine, "relu_cosine"}}};
}
// Degree of eq. 9's normalisation D~^-1/2 A~ D~^-1/2. Absolute: D~_ii = sum_j |A~_ij| (equal to eq. 9's
// sum_j A~_ij whenever no edge is negative; with negative cosine edges it keeps every entry of the
// normalised adjacency in [-1, 1]). SignedClamped: eq. 9 as written, sum_j A~_ij, clamped at 0.01
// (runs written before 2026-11-28; overflows with many small zones, MZU_NOTES.md).
enum class GcnDegree { Absolute, SignedClamped };
constexpr EnumNames<GcnDegree, 2> enum_names(GcnDegree) {
  return {{{GcnDegree::Absolute, "absolute"}, {GcnDegree::SignedClamped, "signed_clamped"}}};
}
enum class GcnAdjacency { CosinePlusIdentity, Cosine };
constexpr EnumNames<GcnAdjacency, 2> enum_names(GcnAdjacency) {
  return {{{GcnAdjacency::CosinePlusIdentity, "cosine_plus_identity"}, {GcnAdjacency::Cosine, "cosine"}}};
}
enum class SatQkv { Shared, PerZone };
constexpr EnumNames<SatQkv, 2> enum_names(SatQkv) {
  return {{{SatQkv::Shared, "shared"}, {SatQkv::PerZone, "per_zone"}}};
}

// The members below are the only defaults of the model.* options of the MZU cells
// (mzu_option_table() in mzu.cpp describes each once); composition, sizes and the common
// options layer_norm / candidate_dropout come from the cell name and the model section.
struct MZUOptions {
  MZUComposition composition = MZUComposition::Gcn;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t zones = 4;               // N; zone size d_z = d_h / N (eq. 4)
  int64_t filter = 512;            // d_f of the zone-wise FFN (eq. 5)
  int64_t depth = 1;               // L transition t-MZUs per step (eqs. 15-17); 0 = plain MZU (paper: "DT" = 1)
  bool share_transition = true;    // t-MZUs reuse the first MZU's M-functions (paper: shared on PTB; see notes)
  int64_t capsules = 2;            // J output capsules (cap), d_o = d_h / J
  int64_t routing_iters = 3;       // T routing iterations (cap)
  double zone_disagreement = 1.0;  // lambda of eq. 19 (paper: 1.0; may be negative)
  DisagreementScale disagreement_scale = DisagreementScale::Mean;  // Mean: per unit of the task loss (see notes)
  DisagreementPairs disagreement_pairs = DisagreementPairs::All;   // eq. 18's pairs: All (i = j included, as written)
  DisagreementForm disagreement_form = DisagreementForm::Cosine;   // Cosine (eq. 18: toward anti-correlation)
  int64_t disagreement_warmup = 0;  // lambda grows linearly over this many training steps (0 = none)
  bool regular_gate = false;        // Table 4 "Regular-Gate": g = sigmoid(W [x, h] + b)
  bool regular_trans = false;       // Table 4 "Regular-Trans.": h~ = tanh(W [x, h] + b)
  bool layer_norm = false;
  LnPosition ln_position = LnPosition::Preact;  // Preact: LN of M_h / M_g outputs; Zones: LN of each zone
  double candidate_dropout = 0;
  GcnActivation gcn_activation = GcnActivation::Relu;             // sigma of eq. 9
  GcnEdges gcn_edges = GcnEdges::Cosine;                          // Cosine (eqs. 7-8) | ReluCosine (negative edges cut)
  GcnAdjacency gcn_adjacency = GcnAdjacency::CosinePlusIdentity;  // A~ = cos + I | Cosine: eq. 8 as written
  GcnDegree gcn_degree = GcnDegree::Absolute;  // eq. 9's D~: sum_j |A~_ij| | SignedClamped (older runs)
  SatQkv sat_qkv = SatQkv::Shared;             // Shared: one W^Q, W^K, W^V for all zones | PerZone
  bool ffn_residual = false;                   // f_j = o_j + FFN(o_j) instead of eq. 5
};

// The MZU cells' model.* options (field table: schema entries and binding).
const OptionTable<MZUOptions>& mzu_option_table();

// D_zone of eq. 18 for zones Z [..., N, d_z] -> [...]: -(1/N^2) sum_ij cos(z_i, z_j) with the
// defaults; pairs Distinct averages over the N(N-1) pairs i != j, form SquaredCosine uses
// cos^2 (maximised by orthogonal zones). The readings are compared in MZU_NOTES.md.
torch::Tensor zone_disagreement(const torch::Tensor& Z, DisagreementPairs pairs = DisagreementPairs::All,
                                DisagreementForm form = DisagreementForm::Cosine);
// The same from the zones' cosine matrix cosm [..., N, N] -> [...].
torch::Tensor zone_disagreement_of_cosines(const torch::Tensor& cosm, DisagreementPairs pairs = DisagreementPairs::All,
                                           DisagreementForm form = DisagreementForm::Cosine);
// Squash of eq. 13 along the last dim: |s|^2/(1+|s|^2) * s/|s| (safe at s = 0).
torch::Tensor squash(const torch::Tensor& s);

// One depth of an MZU: the M-functions (K <= 2, stacked) and the regular linear maps
// (R = 2 - K, Table 4 ablations) producing the candidate's and the gate's pre-activations.
class MZUBlockImpl : public torch::nn::Module {
 public:
  MZUBlockImpl(const MZUOptions& o, int64_t input_size);
  // x [T, B, I] -> [T, B, (K+R) H]: input half of zone generation (eq. 4) and of the
  // regular maps (with their bias), hoisted for the whole sequence.
  torch::Tensor input_projection(const torch::Tensor& x);
  // The same for x = in.table[in.tokens], the product folded into the table (cells/token_fold.h).
  torch::Tensor input_projection_tokens(const TokenInput& in);
  // One depth at one step. xp: this step's input_projection slice, or undefined for a
  // t-MZU (zero input, eqs. 16-17). Returns h_t (eq. 1 / eq. 15). dzone_out (if not
  // null) receives D_zone of each M-function, [B, K] (eq. 18 in the configured reading);
  // cos_out (if not null) the mean cosine over distinct zone pairs, [B, K] (a metric).
  torch::Tensor transition(const torch::Tensor& xp, const torch::Tensor& h, StepContext& ctx, const std::string& pfx,
                           torch::Tensor* dzone_out, bool want_dzone, bool training, torch::Tensor* cos_out = nullptr);
  double flops(bool with_input, bool with_dzone) const;
  int64_t num_mfunctions() const { return K_; }

  // Parameters (shapes with the leading K = number of M-functions).
  torch::Tensor w_x;             // [(K+R) H, I]  zone generation / regular maps, input half (eq. 4)
  torch::Tensor w_h;             // [(K+R) H, H]  ... hidden half
  torch::Tensor b_reg;           // [R H]         bias of the regular maps (Table 4)
  torch::Tensor w_qkv;           // sat: [K N, d_z, 3 d_z] (per zone) or [K, d_z, 3 d_z] (shared)
  torch::Tensor w_g;             // gcn: [K, d_z, d_z] (eq. 9)
  torch::Tensor w_c;             // cap: [K, d_z, J d_o] (eq. 10, shared over input capsules)
  torch::Tensor w1, b1, w2, b2;  // FFN (eq. 5): [K, d_o, d_f], [K, 1, d_f], [K, d_f, d_o], [K, 1, d_o]
  torch::Tensor wo, bo;          // aggregation linear: [K, J d_o, H], [K, 1, H]
  torch::Tensor ln_c_gain, ln_c_bias, ln_g_gain, ln_g_bias;  // LN of the pre-activations [H]
  torch::Tensor ln_z_gain, ln_z_bias;                        // LN of the zones [K, N, d_z]

 private:
  // Zone composition: zones Zk [K, B, N, d_z] -> O [K, B*J, d_o]; records into the probe.
  torch::Tensor compose(const torch::Tensor& Zk, const torch::Tensor& cosm, StepContext& ctx, const std::string& pfx);
  MZUOptions o_;
  int64_t I_, H_, N_, dz_, J_, do_, K_, R_;
  bool m_h_, m_g_;  // which of M_h / M_g are M-functions (the others are regular maps)
};
TORCH_MODULE(MZUBlock);

// The MZU cell (eqs. 1-3) with deep transition (eqs. 15-17): per time step one MZU
// (with input) then L t-MZUs (zero input). The last depth's state is carried.
class MZUCellImpl : public CellImpl {
 public:
  explicit MZUCellImpl(const MZUOptions& o);
  std::string type_name() const override { return to_string(o_.composition) + "_mzu"; }
  int64_t input_size() const override { return o_.input_size; }
  int64_t hidden_size() const override { return o_.hidden_size; }
  torch::Tensor input_projection(const torch::Tensor& x) override;
  torch::Tensor input_projection_tokens(const TokenInput& in);  // first depth's, folded (token_fold.h)
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
  SeqOutput forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) override;
  double flops_per_step() const override;
  const MZUOptions& options() const { return o_; }
  // lambda of eq. 19 at a training step (StepContext::step; -1 = full lambda): the linear
  // warm-up of model.disagreement_warmup.
  double lambda_at(int64_t step) const;
  // eq. 19's term added to the loss for a whole forward, from D [T, B, M] (D_zone of every
  // M-function of every depth at each step): -lambda * sum over real tokens (ctx.token_mask)
  // and M-functions of D / the task loss's units (ctx.loss_units, default T x B). A fused path
  // (fused_mzu) can call it with its own D so that both paths add the same term.
  torch::Tensor disagreement_loss(const torch::Tensor& D, const StepContext& ctx) const;
  // Eq. 19's term and the zone metrics from a whole sequence's D_zone [T, B, M] (eq. 18, all
  // pairs, cosine), as the fast path computes it; the step-wise path adds them itself.
  void add_disagreement(const torch::Tensor& D, StepContext& ctx);

  MZUBlock first{nullptr};
  std::vector<MZUBlock> transitions;  // L entries; with share_transition all are `first`

 private:
  MZUOptions o_;
  // Inside forward_sequence: D [B, M] of each step so far (with graph when regularising),
  // turned into eq. 19's term and the metrics once the sequence is done.
  bool in_sequence_ = false;
  std::vector<torch::Tensor> dz_steps_;
  std::vector<torch::Tensor> cos_steps_;  // mean cosine over distinct zone pairs per step [B] (metric)
  void finish_disagreement(StepContext& ctx);
  void add_disagreement(const torch::Tensor& D, const torch::Tensor& C, StepContext& ctx);
};

}  // namespace cs

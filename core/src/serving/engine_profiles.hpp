// Named engine profiles: a model on a GPU type at a TP degree, calibrated against published benchmarks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "serving/engine.hpp"

namespace gpuscale {

// The profile with this name; throws InputError at "/engine/profile" naming the known ones.
EngineProfile engine_profile(const std::string& name);
// Every known profile name, in a fixed order (the first is the lab's default).
std::vector<std::string> engine_profile_names();

// The least each step-time coefficient can be, from the profile's own hardware and model figures: a
// replica's TP GPUs work in parallel, each streaming its shard of the weights and of every KV token
// from HBM at the datasheet bandwidth, and doing its share of the FLOPs at the datasheet peak.
// With pipeline parallelism the lab runs one batch at a time through the stages in turn, so a step
// costs every stage's share: the time terms divide by the TP degree alone.
struct StepFloors {
  double weights_s = 0;   // weights_gib_per_gpu × pipeline_parallel / hbm_bytes_per_s
  double kv_token_s = 0;  // kv_bytes_per_token / tensor_parallel / hbm_bytes_per_s
  double token_s = 0;     // flops_per_token / (tensor_parallel × peak_matmul_flops)
  double pair_s = 0;      // flops_per_pair / (tensor_parallel × peak_attention_flops)
};
StepFloors physical_floors(const EngineProfile& p);

// Llama 3.3 70B Instruct, FP8 weights and FP8 KV cache, TP2 on 2 × H100 SXM5 80 GB, calibrated to
// the NVIDIA NIM 1.8.0 benchmark table (real-systems.md §7.3). Name "llama-3.3-70b-fp8-tp2-h100-sxm5".
EngineProfile llama_3_3_70b_fp8_tp2_h100_sxm5();
// Llama 3.1 405B Instruct in BF16 over two p5 nodes, TP8 inside each node and PP2 across them (vLLM's
// multi-node example). DERIVED, not calibrated: its coefficients are the 70B profile's efficiencies
// applied to this model's work. Name "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5".
EngineProfile llama_3_1_405b_bf16_tp8_pp2_h100_sxm5();

// Llama 3.3 70B FP8 on H100 SXM5 at another tensor-parallel degree (4 or 8), DERIVED from the TP2
// calibration: the weights and KV split over more GPUs, the compute per token split at the calibrated
// efficiency plus its NVLink all-reduces. Names "llama-3.3-70b-fp8-tp4-h100-sxm5", "...-tp8-...".
EngineProfile llama_3_3_70b_fp8_h100_sxm5_at_tp(int tensor_parallel);
// Seconds of NVLink all-reduce per token for that model at a TP degree (ring algorithm).
double allreduce_s_per_token(int tensor_parallel);
// The profiles of the same model on the same GPU at every TP degree the lab has (itself included), in
// TP order: what the plan designer searches as the replica's shape.
std::vector<std::string> tensor_parallel_variants(const std::string& name);

// A GPU as the engine sees it: datasheet numbers, dense (no sparsity), per GPU.
struct GpuSpec {
  const char* name;            // karpenter.k8s.aws/instance-gpu-name value
  std::int64_t memory_mib;     // karpenter.k8s.aws/instance-gpu-memory value (the variant: A100 40 or 80 GB)
  int compute_capability;      // major × 10 + minor: 90 = sm_90 (Hopper), 80 = sm_80 (Ampere A100)
  double hbm_tb_s;             // TB/s of memory bandwidth
  double bf16_tflops;          // dense BF16 tensor TFLOPS
  double fp8_tflops;           // dense FP8 tensor TFLOPS (0: no FP8 tensor cores)
};
// The spec of a GPU by its label values, or nullptr if the lab has none.
const GpuSpec* find_gpu_spec(const std::string& gpu_name, std::int64_t gpu_memory_mib);

// What a replica's engine becomes on the GPU its pod got.
struct ProfileOnGpu {
  bool loads = false;        // false: vLLM exits at start-up (the pod crash-loops, never Ready)
  EngineProfile profile;     // loads: the profile it runs with
  std::string error;         // !loads: why, in vLLM's words
  std::string explanation;   // the checks and the arithmetic, for the decision log
};
// The calibrated profile of `config` moved onto another GPU (type's label values), checked as vLLM
// checks at start-up: the attention backend's support for an FP8 KV cache, the FP8 GEMM path, and
// the memory left for the KV cache. The step-time terms scale with the hardware (memory-bound terms
// with HBM bandwidth, compute-bound ones with the dense peak of the dtype the GEMMs run in). On the
// calibration GPU itself: the profile unchanged.
ProfileOnGpu profile_on_gpu(const EngineConfig& config, const std::string& gpu_name, std::int64_t gpu_memory_mib);

}  // namespace gpuscale

// Named engine profiles: a model on a GPU type at a TP degree, calibrated against published benchmarks.
#pragma once
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
struct StepFloors {
  double weights_s = 0;   // weights_gib_per_gpu / hbm_bytes_per_s
  double kv_token_s = 0;  // kv_bytes_per_token / tensor_parallel / hbm_bytes_per_s
  double token_s = 0;     // flops_per_token / (tensor_parallel × peak_matmul_flops)
  double pair_s = 0;      // flops_per_pair / (tensor_parallel × peak_attention_flops)
};
StepFloors physical_floors(const EngineProfile& p);

// Llama 3.3 70B Instruct, FP8 weights and FP8 KV cache, TP2 on 2 × H100 SXM5 80 GB, calibrated to
// the NVIDIA NIM 1.8.0 benchmark table (real-systems.md §7.3). Name "llama-3.3-70b-fp8-tp2-h100-sxm5".
EngineProfile llama_3_3_70b_fp8_tp2_h100_sxm5();

}  // namespace gpuscale

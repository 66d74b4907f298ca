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

// Llama 3.3 70B Instruct, FP8 weights and FP8 KV cache, TP2 on 2 × H100 SXM5 80 GB, calibrated to
// the NVIDIA NIM 1.8.0 benchmark table (real-systems.md §7.3). Name "llama-3.3-70b-fp8-tp2-h100-sxm5".
EngineProfile llama_3_3_70b_fp8_tp2_h100_sxm5();

}  // namespace gpuscale

// Named engine profiles and where each number comes from.
#include "serving/engine_profiles.hpp"

#include "gpuscale/errors.hpp"

namespace gpuscale {

EngineProfile llama_3_3_70b_fp8_tp2_h100_sxm5() {
  EngineProfile p;
  p.name = "llama-3.3-70b-fp8-tp2-h100-sxm5";
  p.tensor_parallel = 2;
  // What vLLM logs as total_gpu_memory on an H100 80 GB ("79.11GiB" to "79.25GiB" in published
  // vLLM start-up logs; 79.11 taken).
  p.gpu_memory_gib = 79.11;
  // DERIVED: 70.55 B parameters; the linear layers in FP8 (68.45 GB), embed_tokens and lm_head
  // (128256 × 8192 each) kept in BF16 (4.2 GB): 72.65 GB = 67.7 GiB, half per GPU at TP2.
  p.weights_gib_per_gpu = 33.8;
  // FITTED within the range vLLM logs show for "non_torch_memory" + "PyTorch activation peak
  // memory" (about 1.2–2.5 GiB with max_num_batched_tokens 8192): it sets how many requests fit.
  p.activation_reserve_gib_per_gpu = 1.5;
  // 2 (K and V) × 80 layers × 8 KV heads × 128 head_dim × 1 byte: NIM serves FP8 checkpoints with
  // an FP8 KV cache (real-systems.md §7.3): 160 KiB per token for the whole model.
  p.kv_bytes_per_token = 2.0 * 80 * 8 * 128 * 1;
  p.max_model_len = 131072;  // max_position_embeddings of Llama 3.3 70B
  // KV blocks with the defaults (gpu_memory_utilization 0.9, block 16): per GPU
  // 79.11 × 0.9 − 33.8 − 1.5 = 35.899 GiB; a block costs 16 × 163840 B / 2 = 1.25 MiB per GPU;
  // floor(35.899 GiB / 1.25 MiB) = 29408 blocks = 470,528 tokens, i.e. about 85 requests of
  // 5000 + 500 tokens. The NIM table saturates between concurrency 50 and 100, and its saturated
  // rows (throughput ≈ running × 1/ITL) imply about 86 running: consistent.

  // What bounds the step time from below (physical_floors): H100 SXM5 datasheet figures per GPU,
  // HBM3 3.35 TB/s, FP8 dense tensor cores 1,979 TFLOPS (the linear layers run in FP8), BF16 dense
  // 989 TFLOPS (the attention kernels; the FP8 KV is dequantized to BF16); the model's work: 141
  // GFLOP per token in the linear layers (2 × 70.55 B parameters) and 4 × head_dim 128 × 64 query
  // heads × 80 layers = 2.6 MFLOP per attention (query, key) pair.
  p.hbm_bytes_per_s = 3.35e12;
  p.peak_matmul_flops = 1979e12;
  p.peak_attention_flops = 989e12;
  p.flops_per_token = 141e9;
  p.flops_per_pair = 4.0 * 128 * 64 * 80;

  // Step time (roofline, engine.hpp). The memory terms are the mechanism itself, each GPU streaming
  // its bytes at the HBM bandwidth: the weights, 33.8 GiB per GPU, in 10.83 ms, and a KV token,
  // 80 KiB per GPU, in 24.5 ns. (Until issue 9 both were fitted: 10.7 ms and 16 ns, under the HBM
  // bound.) The rest is calibrated to the NVIDIA NIM 1.8.0 table for Llama-3.3-70B-Instruct FP8 on
  // 2 × H100 80 GB, TP2 (real-systems.md §7.3,
  // docs.nvidia.com/nim/benchmarking/llm/.../performance-tables/llm-1_5-llama3_3-70b.html):
  //  - the concurrency-1 decode step (ITL 18.6 ms, context about 5250) is memory-bound:
  //    base + weights_s + 5250 × kv_token_s = 0.0186 s, so base = 7.64 ms (launches, sync,
  //    scheduling, sampling);
  //  - the lone 5000-token prefill (TTFT 407 ms at concurrency 1) is compute-bound:
  //    base + 5000 × token_s + 12,502,500 pairs × pair_s = 0.4070 s; with pair_s = 2e-9 s (attention
  //    at 66 % of the BF16 peak) that leaves token_s = 74.9 µs, 941 TFLOPS per GPU: 48 % of the FP8
  //    peak, a usual share for FP8 GEMMs at this size.
  // The activation reserve (above) sets how many requests fit, hence the saturated rows.
  // Through closed-loop scenarios (api::run, router and gateway; tests/test_engine.cpp "[nim]", seeds
  // 1–8 averaged), NIM → this model, 5000 in / 500 out:
  //   conc   TTFT ms                  ITL ms                output tok/s
  //     1      407 →    407  -0.0 %   18.6 →  18.6  -0.0 %   52 →  52  -0.8 %
  //     5      547 →    640 +17.0 %   21.8 →  21.8  -0.0 %  218 → 217  -0.4 %
  //    25      689 →    794 +15.2 %   38.8 →  39.6  +2.1 %  623 → 608  -2.4 %
  //    50      835 →    804  -3.7 %   59.7 →  62.1  +4.1 %  814 → 786  -3.4 %
  //   100    7,996 →  7,875  -1.5 %   92.9 → 100.9  +8.6 %  917 → 859  -6.3 %
  //   150   34,794 → 37,247  +7.0 %   92.9 → 100.5  +8.2 %  921 → 857  -7.0 %
  //   200   61,680 → 66,633  +8.0 %   93.1 → 100.0  +7.5 %  921 → 860  -6.6 %
  //   250   88,605 → 95,723  +8.0 %   93.2 → 100.3  +7.6 %  920 → 857  -6.9 %
  //   500 in / 2000 out, conc 1: TTFT 48 → 45 ms (-5.6 %), ITL 18.9 → 18.5 ms (-2.1 %).
  // The saturated rows run about 7 % slow: this vLLM-like engine preempts (recompute) at saturation,
  // which NIM's engine evidently does not. The unsaturated TTFTs at 5 and 25 depend on how the
  // clients' prefills collide, which their start times set (±15 %: workload.start_spread_s).
  const StepFloors f = physical_floors(p);
  p.step_weights_s = f.weights_s;
  p.step_kv_token_s = f.kv_token_s;
  p.step_base_s = 0.0076376;
  p.step_token_s = 7.487e-5;
  p.step_pair_s = 2e-9;
  return p;
}

StepFloors physical_floors(const EngineProfile& p) {
  StepFloors f;
  const double tp = p.tensor_parallel;
  if (p.hbm_bytes_per_s > 0) {
    f.weights_s = p.weights_gib_per_gpu * 1073741824.0 / p.hbm_bytes_per_s;
    f.kv_token_s = p.kv_bytes_per_token / tp / p.hbm_bytes_per_s;
  }
  if (p.peak_matmul_flops > 0) f.token_s = p.flops_per_token / (tp * p.peak_matmul_flops);
  if (p.peak_attention_flops > 0) f.pair_s = p.flops_per_pair / (tp * p.peak_attention_flops);
  return f;
}

std::vector<std::string> engine_profile_names() { return {"llama-3.3-70b-fp8-tp2-h100-sxm5"}; }

EngineProfile engine_profile(const std::string& name) {
  if (name == "llama-3.3-70b-fp8-tp2-h100-sxm5") return llama_3_3_70b_fp8_tp2_h100_sxm5();
  std::string known;
  for (const std::string& n : engine_profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("/engine/profile", "unknown engine profile \"" + name + "\"; known: " + known);
}

}  // namespace gpuscale

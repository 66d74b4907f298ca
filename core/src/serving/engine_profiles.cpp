// Named engine profiles and where each number comes from.
#include "serving/engine_profiles.hpp"

#include <algorithm>
#include <cstdio>

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
  p.gpu_name = "h100";         // p5: karpenter.k8s.aws/instance-gpu-name "h100", instance-gpu-memory 81920
  p.gpu_memory_mib = 81920;
  p.fp8_weights = true;        // the FP8 checkpoint (W8A8: FP8 weights and activations)
  p.fp8_kv_cache = true;       // and an FP8 KV cache
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

EngineProfile llama_3_1_405b_bf16_tp8_pp2_h100_sxm5() {
  const EngineProfile cal = llama_3_3_70b_fp8_tp2_h100_sxm5();
  EngineProfile p;
  p.name = "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5";
  p.tensor_parallel = 8;    // the 8 GPUs of a p5.48xlarge, NVLink inside the node
  p.pipeline_parallel = 2;  // two stages, one per node (vLLM docs, "Distributed inference and serving":
                            // --tensor-parallel-size 8 --pipeline-parallel-size 2 over two 8-GPU nodes)
  p.gpu_memory_gib = cal.gpu_memory_gib;
  // DERIVED: 405.85 B parameters in BF16 = 811.7 GB = 755.9 GiB, a sixteenth per GPU.
  p.weights_gib_per_gpu = 47.25;
  // ASSUMED: the 70B profile's reserve plus the larger hidden size's activations (16,384 vs 8,192).
  p.activation_reserve_gib_per_gpu = 2.0;
  // 2 (K and V) × 126 layers × 8 KV heads × 128 head_dim × 2 bytes (BF16 KV cache).
  p.kv_bytes_per_token = 2.0 * 126 * 8 * 128 * 2;
  p.max_model_len = 131072;
  p.gpu_name = cal.gpu_name;
  p.gpu_memory_mib = cal.gpu_memory_mib;
  p.fp8_weights = false;
  p.fp8_kv_cache = false;
  // The H100's BF16 peak for the linear layers and the attention; the model's work: 2 × 405.85 B FLOPs
  // per token, 4 × head_dim 128 × 128 query heads × 126 layers per attention pair.
  p.hbm_bytes_per_s = cal.hbm_bytes_per_s;
  p.peak_matmul_flops = 989e12;
  p.peak_attention_flops = cal.peak_attention_flops;
  p.flops_per_token = 2 * 405.85e9;
  p.flops_per_pair = 4.0 * 128 * 128 * 126;
  // Step terms: the memory ones are the mechanism (physical_floors); the compute ones carry the 70B
  // profile's measured share of the peak (its token_s and pair_s over their floors) onto this model;
  // each stage pays the 70B profile's fixed overhead, plus the activations' hop between the nodes
  // (ASSUMED 0.5 ms: 16,384 × 2 bytes per token over EFA is far less; the hop's latency dominates).
  // The lab runs one batch at a time through both stages; vLLM keeps a batch in flight per stage
  // (virtual engines), so at saturation a real deployment serves up to twice what this profile does.
  const StepFloors f = physical_floors(p), fc = physical_floors(cal);
  p.step_weights_s = f.weights_s;
  p.step_kv_token_s = f.kv_token_s;
  p.step_base_s = cal.step_base_s * p.pipeline_parallel + 0.0005;
  p.step_token_s = f.token_s * (cal.step_token_s / fc.token_s);
  p.step_pair_s = f.pair_s * (cal.step_pair_s / fc.pair_s);
  return p;
}

double allreduce_s_per_token(int tensor_parallel) {
  // Llama 3.3 70B: two all-reduces per layer (after attention and after the MLP), 80 layers, of the
  // BF16 hidden state, 8,192 × 2 bytes per token. The ring algorithm moves 2(n − 1)/n of the buffer
  // through each GPU's link; H100 NVLink 4 carries 450 GB/s per direction (18 links of 25 GB/s).
  if (tensor_parallel <= 1) return 0;
  const double bytes = 2.0 * 80 * 8192 * 2, n = tensor_parallel;
  return bytes * 2 * (n - 1) / n / 450e9;
}

EngineProfile llama_3_3_70b_fp8_h100_sxm5_at_tp(int tensor_parallel) {
  const EngineProfile cal = llama_3_3_70b_fp8_tp2_h100_sxm5();
  if (tensor_parallel == cal.tensor_parallel) return cal;
  EngineProfile p = cal;
  p.name = "llama-3.3-70b-fp8-tp" + std::to_string(tensor_parallel) + "-h100-sxm5";
  p.tensor_parallel = tensor_parallel;
  // DERIVED: the same 67.6 GiB of weights over more GPUs; the same activation reserve per GPU (ASSUMED).
  p.weights_gib_per_gpu = cal.weights_gib_per_gpu * cal.tensor_parallel / tensor_parallel;
  // Step terms: the memory ones are the mechanism (physical_floors). The compute per token splits over
  // the GPUs at the calibrated share of the peak, and each token also pays its all-reduces over NVLink,
  // which the TP2 calibration already contains at TP2's size: token_s = (token_s(TP2) − allreduce(2)) ×
  // 2 / TP + allreduce(TP). Attention splits by heads. This reproduces the two sourced TP figures for
  // this model on H100 (real-systems.md §7.3, tests/test_engine.cpp "[tp]"): at 2,048-token prefills,
  // TP8 spends about a third of its prefill time in all-reduce (35 % measured), and two TP4 replicas
  // out-serve one TP8 by about 30 % (27 % measured). The fixed per-step overhead stays TP2's (ASSUMED).
  const StepFloors f = physical_floors(p);
  p.step_weights_s = f.weights_s;
  p.step_kv_token_s = f.kv_token_s;
  const double scale = static_cast<double>(cal.tensor_parallel) / tensor_parallel;
  p.step_token_s = (cal.step_token_s - allreduce_s_per_token(cal.tensor_parallel)) * scale + allreduce_s_per_token(tensor_parallel);
  p.step_pair_s = cal.step_pair_s * scale;
  return p;
}

std::vector<std::string> tensor_parallel_variants(const std::string& name) {
  const std::vector<std::string> llama70 = {"llama-3.3-70b-fp8-tp2-h100-sxm5", "llama-3.3-70b-fp8-tp4-h100-sxm5", "llama-3.3-70b-fp8-tp8-h100-sxm5"};
  if (std::find(llama70.begin(), llama70.end(), name) != llama70.end()) return llama70;
  return {name};
}

StepFloors physical_floors(const EngineProfile& p) {
  StepFloors f;
  const double tp = p.tensor_parallel;
  if (p.hbm_bytes_per_s > 0) {
    f.weights_s = p.weights_gib_per_gpu * p.pipeline_parallel * 1073741824.0 / p.hbm_bytes_per_s;
    f.kv_token_s = p.kv_bytes_per_token / tp / p.hbm_bytes_per_s;
  }
  if (p.peak_matmul_flops > 0) f.token_s = p.flops_per_token / (tp * p.peak_matmul_flops);
  if (p.peak_attention_flops > 0) f.pair_s = p.flops_per_pair / (tp * p.peak_attention_flops);
  return f;
}

namespace {

// Datasheet numbers, dense (sparsity halves the headline TFLOPS): NVIDIA H100 Tensor Core GPU
// datasheet (SXM5: 3.35 TB/s HBM3, 989 BF16 / 1,979 FP8 TFLOPS), H200 datasheet (4.8 TB/s HBM3e,
// the same GH100 compute), A100 datasheet (40 GB HBM2 1.555 TB/s, 80 GB HBM2e 2.039 TB/s, 312 BF16
// TFLOPS, no FP8), L40S (864 GB/s, 362 / 733), L4 (300 GB/s, 121 / 242). Compute capabilities from
// developer.nvidia.com/cuda-gpus.
constexpr GpuSpec kGpus[] = {
    {"h100", 81920, 90, 3.35, 989, 1979},  {"h200", 143360, 90, 4.8, 989, 1979}, {"a100", 40960, 80, 1.555, 312, 0},
    {"a100", 81920, 80, 2.039, 312, 0},    {"l40s", 46080, 89, 0.864, 362, 733}, {"l4", 23040, 89, 0.3, 121, 242},
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string cc_text(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

}  // namespace

const GpuSpec* find_gpu_spec(const std::string& gpu_name, std::int64_t gpu_memory_mib) {
  const GpuSpec* any = nullptr;
  for (const GpuSpec& g : kGpus) {
    if (gpu_name != g.name) continue;
    if (g.memory_mib == gpu_memory_mib) return &g;
    if (!any) any = &g;
  }
  return any;  // the name matches, the memory variant is not listed: the first of the name
}

ProfileOnGpu profile_on_gpu(const EngineConfig& config, const std::string& gpu_name, std::int64_t gpu_memory_mib) {
  const EngineProfile& cal = config.profile;
  ProfileOnGpu out;
  out.profile = cal;
  if (gpu_name == cal.gpu_name && gpu_memory_mib == cal.gpu_memory_mib) {
    out.loads = true;
    out.explanation = "the GPU the profile is calibrated on (" + cal.gpu_name + ")";
    return out;
  }
  const GpuSpec* from = find_gpu_spec(cal.gpu_name, cal.gpu_memory_mib);
  const GpuSpec* to = find_gpu_spec(gpu_name, gpu_memory_mib);
  const std::string gpu = (gpu_name.empty() ? std::string("no GPU") : gpu_name) + " (" + std::to_string(gpu_memory_mib / 1024) + " GiB)";
  if (!from || !to) {
    out.error = "the lab has no hardware figures for " + (to ? cal.gpu_name : gpu) + " to move profile " + cal.name + " onto " + gpu;
    out.explanation = out.error;
    return out;
  }
  std::vector<std::string> notes, errors;
  // 1. The FP8 KV cache: vLLM V1's FlashAttention backend refuses it unless FlashAttention 3 runs,
  //    which needs Hopper (vllm/v1/attention/backends/flash_attn.py: FlashAttentionImpl.__init__,
  //    flash_attn_supports_fp8()).
  if (cal.fp8_kv_cache && to->compute_capability < 90) {
    errors.push_back("NotImplementedError: FlashAttention does not support fp8 kv-cache on this device (the FP8 KV cache needs "
                     "FlashAttention 3, compute capability 9.0; " + gpu_name + " has " + cc_text(to->compute_capability) + ")");
  }
  // 2. FP8 GEMMs: W8A8 needs FP8 tensor cores, compute capability >= 8.9; below it vLLM runs the FP8
  //    checkpoint weight-only through the Marlin kernel (W8A16: FP8 weights, BF16 compute), in the same
  //    memory (vllm/model_executor/layers/quantization/fp8.py: Fp8LinearMethod, use_marlin =
  //    not has_device_capability(89); docs/features/quantization/fp8.md).
  double from_gemm = from->bf16_tflops, to_gemm = to->bf16_tflops;
  if (cal.fp8_weights) {
    from_gemm = from->fp8_tflops;
    if (to->compute_capability >= 89 && to->fp8_tflops > 0) {
      to_gemm = to->fp8_tflops;
    } else {
      notes.push_back("FP8 weights run weight-only (Marlin W8A16, compute capability " + cc_text(to->compute_capability) + " < 8.9)");
    }
  }
  // 3. Memory: the same share of the nominal memory visible to CUDA as on the calibration GPU.
  EngineProfile& p = out.profile;
  p.name = cal.name + " on " + gpu_name;
  p.gpu_name = gpu_name;
  p.gpu_memory_mib = gpu_memory_mib;
  p.gpu_memory_gib = cal.gpu_memory_gib * static_cast<double>(gpu_memory_mib) / static_cast<double>(cal.gpu_memory_mib);
  const double kv_gib = p.gpu_memory_gib * config.gpu_memory_utilization - p.weights_gib_per_gpu - p.activation_reserve_gib_per_gpu;
  EngineConfig moved = config;
  moved.profile = p;
  const std::int64_t blocks = Engine::compute_num_kv_blocks(moved);
  const std::string memory = "TP" + std::to_string(p.tensor_parallel) + (p.pipeline_parallel > 1 ? " × PP" + std::to_string(p.pipeline_parallel) : "") + ": " + fmt("%.2f", config.gpu_memory_utilization) + " × " +
                             fmt("%.2f", p.gpu_memory_gib) + " GiB − " + fmt("%.2f", p.weights_gib_per_gpu) + " GiB weights − " +
                             fmt("%.2f", p.activation_reserve_gib_per_gpu) + " GiB activations = " + fmt("%.2f", kv_gib) +
                             " GiB per GPU for the KV cache";
  if (blocks <= 0) {
    errors.push_back("ValueError: No available memory for the cache blocks (" + memory + ")");
  } else {
    const std::int64_t tokens = blocks * config.block_size;
    const int wanted = config.max_model_len > 0 ? config.max_model_len : cal.max_model_len;
    notes.push_back(memory + ": " + std::to_string(tokens) + " tokens" +
                    (tokens < wanted ? " (below max_model_len " + std::to_string(wanted) + "; the lab lowers it to fit)" : ""));
  }
  // 4. Step time: memory-bound terms with the bandwidth, compute-bound ones with the GEMM dtype's peak
  //    (attention pairs with BF16's); the fixed per-step overhead stays.
  const double bw = from->hbm_tb_s / to->hbm_tb_s, gemm = from_gemm / to_gemm, attn = from->bf16_tflops / to->bf16_tflops;
  p.step_weights_s = cal.step_weights_s * bw;
  p.step_kv_token_s = cal.step_kv_token_s * bw;
  p.step_token_s = cal.step_token_s * gemm;
  p.step_pair_s = cal.step_pair_s * attn;
  // The moved profile states the hardware it now runs on, so physical_floors() holds for it too.
  p.hbm_bytes_per_s = to->hbm_tb_s * 1e12;
  p.peak_matmul_flops = to_gemm * 1e12;
  p.peak_attention_flops = to->bf16_tflops * 1e12;
  notes.push_back("step terms from " + cal.gpu_name + ": memory × " + fmt("%.3f", bw) + " (HBM " + fmt("%.3g", from->hbm_tb_s) + " / " +
                  fmt("%.3g", to->hbm_tb_s) + " TB/s), GEMMs × " + fmt("%.3f", gemm) + " (" + fmt("%.0f", from_gemm) + " / " +
                  fmt("%.0f", to_gemm) + " TFLOPS), attention × " + fmt("%.3f", attn));
  std::string all;
  for (const std::string& e : errors) all += (all.empty() ? "" : "; ") + e;
  out.error = all;
  out.loads = errors.empty();
  std::string why = out.loads ? "" : all + "; ";
  for (std::size_t i = 0; i < notes.size(); ++i) why += (i ? "; " : "") + notes[i];
  out.explanation = "on " + gpu + ": " + why;
  return out;
}

std::vector<std::string> engine_profile_names() {
  return {"llama-3.3-70b-fp8-tp2-h100-sxm5", "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5", "llama-3.3-70b-fp8-tp4-h100-sxm5", "llama-3.3-70b-fp8-tp8-h100-sxm5"};
}

EngineProfile engine_profile(const std::string& name) {
  if (name == "llama-3.3-70b-fp8-tp2-h100-sxm5") return llama_3_3_70b_fp8_tp2_h100_sxm5();
  if (name == "llama-3.3-70b-fp8-tp4-h100-sxm5") return llama_3_3_70b_fp8_h100_sxm5_at_tp(4);
  if (name == "llama-3.3-70b-fp8-tp8-h100-sxm5") return llama_3_3_70b_fp8_h100_sxm5_at_tp(8);
  if (name == "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5") return llama_3_1_405b_bf16_tp8_pp2_h100_sxm5();
  std::string known;
  for (const std::string& n : engine_profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("/engine/profile", "unknown engine profile \"" + name + "\"; known: " + known);
}

}  // namespace gpuscale

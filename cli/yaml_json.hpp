// YAML text → JSON the way kubectl reads it, bounded so that no input can hang, exhaust memory or crash.
#pragma once
#include <cstddef>
#include <string>

#include "gpuscale/errors.hpp"
#include "gpuscale/json.hpp"

namespace gpuscale {

// What one YAML text may cost. Each bound, when exceeded, is an InputError that says which.
struct YamlLimits {
  // Bytes of YAML text. A NodePool is a few KiB; yaml-cpp queues tokens while a flow collection is
  // open, about 250 bytes of memory per input byte at worst, so this also bounds its memory (~64 MB).
  std::size_t max_bytes = 256u << 10;
  int max_documents = 16;            // documents in the stream, '---' separated
  // Lists and mappings nested in one another: no deeper than the core's JSON reader accepts.
  int max_depth = static_cast<int>(kMaxJsonDepth);
  // An alias (*a) copies the value it names, and each anchored (&a) list or mapping is kept as a copy
  // for its aliases. Over the whole stream, aliases expand to at most this many values and bytes of text
  // (scalars and keys), and anchors hold at most as many; with max_bytes this bounds the JSON.
  std::size_t max_copied_values = 100000;  // values
  std::size_t max_copied_bytes = 8u << 20;  // bytes
};

// Every document of a YAML stream as JSON: an array with one element per document (an empty document
// is null). Plain scalars resolve as in YAML 1.1 / go-yaml v2 (docs/nodepool.md, "Input"). Throws
// InputError for malformed YAML (in plain words, with line and column), for what JSON cannot hold
// (non-text keys, duplicate keys, cycles, infinities, numbers beyond a double, invalid UTF-8), and when a
// limit is exceeded; the path of an error is the JSON Pointer of the value where it happened.
Json yaml_documents_to_json(const std::string& text, const YamlLimits& limits = {});

// The NodePool document of a file, as JSON text. A `.json` path, or text that is a JSON object, is
// returned as is. Otherwise the text is YAML; documents whose apiVersion starts with
// `karpenter.k8s.aws/` (the EC2NodeClass the pool refers to) are skipped and exactly one must remain.
std::string nodepool_json_text(const std::string& path_or_name, const std::string& text);
// A cluster snapshot for `schedule`: JSON as it is, or one YAML document as JSON.
std::string snapshot_json_text(const std::string& path, const std::string& text);

// The NodePool check refused `error` in `json_text`, which nodepool_json_text made from the YAML
// `yaml_text`. If the refused value is text that YAML read from `key:value` with no space after the
// ':' (so `metadata:` got the text "name:gpu" instead of a mapping), throws that YAML mistake at its
// line instead; otherwise returns, and the caller reports `error` as it is.
void explain_yaml_value_error(const std::string& yaml_text, const std::string& json_text, const InputError& error);

}  // namespace gpuscale

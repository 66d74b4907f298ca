// The module's JavaScript API (docs/wasm-api.md), linked into sim.mjs with --post-js: each function
// takes text and returns the envelope's text, calling the plain C exports of bindings.cpp. This is
// what embind used to generate: the same names, optional trailing arguments, and a BindingError
// (thrown before the module runs, the instance untouched) for a wrong number or kind of arguments.

class BindingError extends Error {
  constructor(message) {
    super(message);
    this.name = 'BindingError';
  }
}

// The progress functions of the calls running (a progress function may itself call the module).
const simProgressStack = [];

// Called from bindings.cpp (gs_progress) while the running call simulates.
function simProgress(fraction, label) {
  simProgressStack[simProgressStack.length - 1](fraction, label);
}

// The reply of the C call that just returned `ptr`: its bytes decoded by the host's TextDecoder
// straight from the module's memory (the envelope is ASCII, so this is a fast one-byte string).
const simDecoder = new TextDecoder();
function simReply(ptr) {
  return simDecoder.decode(HEAPU8.subarray(ptr, ptr + Module['_gs_reply_size']()));
}

// A text argument as embind's std::string took it: a string (sent as UTF-8), or raw bytes (an
// ArrayBuffer, Uint8Array, Uint8ClampedArray or Int8Array, sent as they are).
function simText(value, name, i) {
  if (typeof value === 'string') return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value instanceof Uint8Array || value instanceof Uint8ClampedArray || value instanceof Int8Array) {
    return new Uint8Array(value.buffer, value.byteOffset, value.length);
  }
  throw new BindingError(`Cannot pass non-string to std::string (argument ${i + 1} of '${name}')`);
}

/**
 * Defines Module[name](...args) over the C function `_gs_<name>`: `texts` names the text arguments
 * of which the first `required` must be given (the rest default to ""), and `progress` whether a
 * progress function may follow them.
 */
function simDefine(name, texts, required, progress) {
  const most = texts + (progress ? 1 : 0);
  Module[name] = function (...args) {
    if (args.length < required || args.length > most) {
      const counts = Array.from({ length: most - required + 1 }, (_, i) => required + i).join(', ');
      throw new BindingError(`Function '${name}' called with an invalid number of arguments (${args.length}) - expects one of (${counts})!`);
    }
    const values = [];
    for (let i = 0; i < texts; i += 1) values.push(i < args.length ? simText(args[i], name, i) : '');
    // Arguments are copied into the module's memory and freed once the call returns. (A call that
    // throws leaves them: the instance is dropped then anyway, and freeing could mask the error.)
    const cArgs = [];
    const copies = [];
    for (const value of values) {
      const bytes = typeof value === 'string' ? lengthBytesUTF8(value) : value.length;
      const ptr = _malloc(bytes + 1);
      if (typeof value === 'string') stringToUTF8(value, ptr, bytes + 1);
      else HEAPU8.set(value, ptr);
      cArgs.push(ptr, bytes);
      copies.push(ptr);
    }
    const fn = progress ? args[texts] : undefined;
    if (progress) cArgs.push(typeof fn === 'function' ? 1 : 0);
    if (typeof fn === 'function') simProgressStack.push(fn);
    let reply;
    try {
      reply = simReply(Module['_gs_' + name](...cArgs));
    } finally {
      if (typeof fn === 'function') simProgressStack.pop();
    }
    for (const ptr of copies) _free(ptr);
    return reply;
  };
}

simDefine('version', 0, 0, false);
simDefine('run', 1, 1, true);
simDefine('hpa', 1, 1, false);
simDefine('exercise', 2, 2, false);
simDefine('grade', 4, 3, true);     // grade(definition, seed, answer[, context[, progress]])
simDefine('explain', 3, 2, true);   // explain(definition, seed[, context[, progress]])
simDefine('schema', 0, 0, false);
simDefine('nodepool_check', 1, 1, false);
simDefine('schedule', 1, 1, false);
simDefine('plan', 1, 1, true);      // plan(input[, progress])
simDefine('debug_trap', 1, 1, false);

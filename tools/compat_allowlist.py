"""Why Ember lacks each PyTorch name that ``tools/compat_report.py`` finds missing.

:data:`GAPS` maps a namespace of the report (``"torch.nn"``, ``"torch.Tensor"``,
``"torch.nn.modules.*"``...) to reasons, and each reason to the names it explains. A name
may be an ``fnmatch`` glob (``"cudnn_*"``) for a family; an exact name wins over a glob.
``tests/integration/test_compat_report.py`` fails when a missing name has no entry here
(a new gap cannot hide) and when an entry no longer matches a missing name (it is stale:
delete it when the name lands).

"Not yet" is an honest reason, not a waiver: those names are work to do.
"""

from __future__ import annotations

# The releases this list was written against (the oracles that noxfile.py pins): under other
# releases the names differ, and the test checks only the rows whose oracle matches.
ORACLES = {"torch": "2.13.", "torchvision": "0.29."}

# -- reasons ---------------------------------------------------------------------------------
NOT_YET = "issue 18: not yet"
SYMBOLIC = ("symbolic shapes: ember.export keeps dynamic dims as Dim expressions inside the "
            "graph; user code never holds a SymInt/SymFloat/SymBool")
TORCHSCRIPT_COMPILER = ("TorchScript's compiler of Python source and its IR: ember.jit.script "
                        "runs the Python and captures it for save (ember.jit.ScriptFunction "
                        "and friends live in ember.jit)")
CODE_ARCHIVES = ("archives that carry Python code or compiled models to import (torch.package, "
                 "nativert): Ember's saved programs never run code on load (ember.export.save)")
NO_PARTITIONER = ("torch.compile's activation-memory budget for its min-cut partitioner: "
                  "ember.compile replays whole steps, it has no partitioner to budget")
EINOPS = "needs einops, which ember does not depend on (write the permute/reshape instead)"
QUANTIZATION = "quantization: not planned"
LOW_BITS = "sub-byte dtypes: no NumPy/CuPy array type holds one element per value"
BACKEND_KERNELS = ("backend-specific kernels and devices (cuDNN, MIOpen, MKL-DNN, Vulkan, XLA, "
                   "IPU, MTIA, MAIA): not API for a NumPy/CuPy framework")
CUDA_ONLY = "CUDA-only internals (tensor-core float8/grouped GEMMs, multi-GPU comm, streams)"
ATEN_INTERNALS = ("ATen kernels that torch exports without an underscore (native_*, RNN cells, "
                  "SyncBatchNorm's reductions): called by PyTorch's layers, not by users")
TORCH_C_INTERNALS = ("torch._C bindings that torch.__all__ exports (TorchScript IR and types, "
                     "dispatcher keys, benchmark/logging helpers): no user-facing role")
DEPRECATED = "deprecated in PyTorch"
REMOVED = "removed from PyTorch: the name only raises an error pointing elsewhere"
DATAPIPES = "DataPipes: deprecated in PyTorch (moved to torchdata, then dropped there)"
PROTOTYPE = "prototype API in PyTorch (named tensors): not planned"
NESTED_ONLY = ("a method of nested tensors only (ember.nested's NestedTensor has it; a plain "
               "tensor's would only raise)")
FIRST_CLASS_DIMS = ("functorch's first-class dimensions (Tensor.index binds them): a "
                    "prototype API in PyTorch, not planned")
TYPE_HINTS = "type-hint-only modules and aliases: nothing to run"
UNDOCUMENTED = "undocumented internal helper that PyTorch names without an underscore"
VIDEO = "video decoding (torchvision.io video, video datasets): not planned"
TORCHSCRIPT_TOOLS = ("tools for TorchScript modules and their mobile form (bundled inputs, "
                     "mobile optimizer, model dump, ScriptModule benchmarks, jit logs, the "
                     "archive viewer): Ember has no TorchScript archives (ember.export files)")
C10D_INTERNALS = ("c10d's C++ plumbing (the option structs a C++ backend's collectives take, "
                  "BackendConfig, ProcessGroupGloo, DDP's Reducer/Logger/builtin comm-hook "
                  "enum, comm logging and recording helpers): Ember's collectives run on MPI "
                  "(NCCL on GPUs) from Python")
RPC = ("torch.distributed.rpc (RPC, RRef, distributed autograd, remote devices): in maintenance "
       "in PyTorch; not in Ember (collectives, DTensor and FSDP cover data and model "
       "parallelism; ember.distributed.rpc reports is_available() False, as a PyTorch build "
       "without RPC does)")
RENDEZVOUS = ("rendezvous URL handlers: init_process_group takes env:// and the MPI launcher's "
              "world; custom handlers are not in Ember")
NO_ULFM = ("shrinking a group around dead ranks needs a fault-tolerant MPI (ULFM); Ember "
           "breaks the job on a failed rank instead (ember.distributed.distributed_c10d)")
DCP_NOT_YET = ("not yet: quantized (FP8 block) HuggingFace checkpoints, the staging/process "
               "async checkpointers (async_save runs in a thread), and the ShardedTensor-era "
               "load_sharded_optimizer_state_dict")
FSDP_SPMD_DIMS = ("not yet: fully_shard over a whole SPMD mesh whose data-parallel dims are "
                  "named (dp_mesh_dims, new in PyTorch 2.13); fully_shard(mesh=mesh['dp']) "
                  "over tensor-parallel DTensors is there")
NO_STREAMS = ("CUDA streams shared between FSDP roots (pipeline parallelism): Ember's "
              "collectives complete when called, there are no communication streams")
CPP_EXTENSIONS = ("building C++/CUDA extensions against libtorch (cpp_extension, hipify): "
                  "Ember's custom ops are Python over NumPy/CuPy (ember.library), and C++ "
                  "programs link ember-cpp")

# -- gaps: namespace -> reason -> names (globs allowed) ------------------------------------
GAPS: dict[str, dict[str, list[str]]] = {
    "torch": {
        NOT_YET: [],
        DEPRECATED: [],
        SYMBOLIC: [],
        TORCHSCRIPT_COMPILER: ["JITException", "CompilationUnit"],
        TORCH_C_INTERNALS: [
            "AVG", "SUM", "AggregationType", "AliasDb", "Argument", "ArgumentSpec",
            "BenchmarkConfig", "BenchmarkExecutionStats", "Block", "BufferDict", "CallStack",
            "Capsule", "ClassType", "Code", "CompleteArgumentSpec", "ConcreteModuleType",
            "ConcreteModuleTypeBuilder", "DeepCopyMemoTable", "DeserializationStorageContext",
            "DisableTorchFunction", "DisableTorchFunctionSubclass", "DispatchKey",
            "DispatchKeySet", "EnumType", "ErrorReport", "ExcludeDispatchKeyGuard",
            "ExecutionPlan", "FatalError", "FileCheck", "FunctionSchema", "Gradient", "Graph",
            "GraphExecutorState", "IODescriptor", "InferredType", "InterfaceType",
            "LiteScriptModule", "LockingLogger", "ModuleDict", "Node", "NoopLogger",
            "OperatorInfo", "ParameterDict", "PyTorchFileWriter", "Script*",
            "SerializationStorageContext", "StaticModule", "ThroughputBenchmark",
            "TracingState", "Use", "Value", "import_ir_module", "import_ir_module_from_buffer",
            "merge_type_from_type_comment", "parse_ir", "parse_schema", "parse_type_comment",
            "unify_type_list"],
        ATEN_INTERNALS: [
            "native_*", "batch_norm_backward_*", "batch_norm_elemt", "batch_norm_gather_stats*",
            "batch_norm_stats", "batch_norm_update_stats"],
        QUANTIZATION: ["q_*", "qint8", "qint32", "quint8", "quint2x4", "quint4x2", "qscheme",
                       "quantize_*", "quantized_*", "dequantize", "int_repr", "empty_quantized",
                       "fake_quantize_*", "fused_moving_avg_obs_fake_quant",
                       "choose_qparams_optimized", "fbgemm_*"],
        LOW_BITS: ["bit", "bits*", "float4_*", "int1", "int2", "int3", "int4",
                   "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6",
                   "uint7"],
        BACKEND_KERNELS: ["cudnn_*", "miopen_*", "mkldnn_*", "is_vulkan_available",
                          "*autocast_ipu*", "*autocast_xla*"],
    },
    "torch.Tensor": {
        FIRST_CLASS_DIMS: ["index"],
        REMOVED: ["reinforce"],
        QUANTIZATION: ["q_*", "qscheme", "dequantize", "int_repr"],
        PROTOTYPE: ["name"],
        NESTED_ONLY: ["to_padded_tensor"],
        BACKEND_KERNELS: ["ipu", "to_mkldnn", "mtia"],
        ATEN_INTERNALS: [],
    },
    "torch.nn": {
        NOT_YET: [
                  ],
        DEPRECATED: ["Container", "NLLLoss2d"],
        QUANTIZATION: ["intrinsic", "qat", "quantizable", "quantized"],
        TYPE_HINTS: ["common_types"],
    },
    "torch.nn.functional": {
        NOT_YET: [
                  ],
        CUDA_ONLY: ["ScalingType", "SwizzleType", "scaled_mm", "scaled_grouped_mm",
                    "grouped_mm"],
        UNDOCUMENTED: ["assert_int_or_pair"],
    },
    "torch.nn.utils": {
        NOT_YET: [],
    },
    "torch.utils.data": {
        DATAPIPES: ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe",
                    "functional_datapipe", "argument_validation",
                    "guaranteed_datapipes_determinism", "non_deterministic",
                    "runtime_validation", "runtime_validation_disabled"],
    },
    "torch.autograd": {
        DEPRECATED: ["NestedIOFunction"],
    },
    "torch.func": {
        EINOPS: ["rearrange"],
    },
    "torch.* modules": {
        CODE_ARCHIVES: ["nativert", "package"],
        QUANTIZATION: ["ao", "quantization"],
        BACKEND_KERNELS: ["mtia"],
        UNDOCUMENTED: ["contrib", "monitor", "numa"],
    },
    "torch.utils modules": {
        DEPRECATED: [],
        BACKEND_KERNELS: ["backend_registration", "mkldnn"],
        TORCHSCRIPT_TOOLS: ["bundled_inputs", "jit", "mobile_optimizer", "model_dump",
                            "show_pickle", "throughput_benchmark"],
        CPP_EXTENSIONS: ["cpp_extension", "hipify"],
        UNDOCUMENTED: ["cpp_backtrace", "debug_log", "file_baton", "viz"],
    },
    "torch.nn.modules.*": {
        DEPRECATED: ["container.Container", "loss.NLLLoss2d"],
    },
    "torch.nn.parallel.*": {
        CUDA_ONLY: ["comm.*"],
    },
    "torch.nn.utils.*": {
        NOT_YET: [
                  ],
        UNDOCUMENTED: ["rnn.bind"],
    },
    "torch.utils.data.*": {
        NOT_YET: [],
        DEPRECATED: ["backward_compatibility.worker_init_fn"],
        DATAPIPES: ["graph.*", "graph_settings.*"],
    },
    "torch.autograd.*": {
        NOT_YET: [],
        DEPRECATED: ["function.NestedIOFunction", "variable.*", "gradcheck.get_*_jacobian*"],
        NO_PARTITIONER: ["graph.region_activation_memory_budget"],
        CUDA_ONLY: ["graph.set_override_stale_capture_stream",
                    "graph.set_warn_on_accumulate_grad_stream_mismatch"],
    },
    "submodules as attributes": {
        CUDA_ONLY: ["nn.parallel.comm"],
        DATAPIPES: ["utils.data.datapipes", "utils.data.graph", "utils.data.graph_settings"],
        DEPRECATED: [],
    },
    "torch.distributed": {
        C10D_INTERNALS: ["*Options", "BackendConfig", "get_backend_config", "ProcessGroupGloo",
                         "Reducer", "Logger", "BuiltinCommHookType", "c10d_logger",
                         "logging_handlers", "record_comm", "config"],
        RPC: ["autograd", "remote_device"],
        RENDEZVOUS: ["rendezvous", "register_rendezvous_handler"],
        NO_ULFM: ["shrink_group"],
        UNDOCUMENTED: ["utils"],
    },
    "torch.distributed.fsdp": {
        FSDP_SPMD_DIMS: ["DataParallelMeshDims"],
        NO_STREAMS: ["share_comm_ctx"],
    },
    "torch.distributed.checkpoint": {
        DCP_NOT_YET: ["QuantizedHuggingFaceStorageReader", "quantized_hf_storage", "staging",
                      "load_sharded_optimizer_state_dict", "optimizer"],
        UNDOCUMENTED: ["logger", "logging_handlers", "planner_helpers", "resharding"],
    },
    # torchvision's rows run only where torchvision is installed (nox -s vision_parity).
    "torchvision.models": {
        QUANTIZATION: ["quantization"],
    },
    "torchvision.datasets": {
        VIDEO: ["HMDB51", "Kinetics", "UCF101", "MovingMNIST"],
    },
    "torchvision.utils": {
        UNDOCUMENTED: ["_Image_fromarray"],
    },
}


def entries() -> dict[str, dict[str, str]]:
    """namespace -> {name or glob: reason}; a name listed twice in a namespace is an error."""
    flat: dict[str, dict[str, str]] = {}
    for namespace, groups in GAPS.items():
        names = flat.setdefault(namespace, {})
        for reason, listed in groups.items():
            for name in listed:
                if name in names:
                    raise ValueError(f"{namespace}: {name!r} is listed twice "
                                     f"({names[name]!r} and {reason!r})")
                names[name] = reason
    return flat

"""The tests that cannot pass with the strict device as the default device, and why.

``EMBER_TEST_DEVICE=strict python -m pytest tests/...`` (see ``conftest.py``) runs the suite
with ``ember.testing.register_strict_device()``'s device as the default: every tensor a test
makes lands there, so every kernel meets arrays that refuse NumPy as CuPy's do. The tests
below check behaviour that is the CPU's by definition (sharing memory with NumPy, the CPU
generator, the repr of a CPU tensor) and are skipped there, each with its reason. Patterns
are ``fnmatch`` globs over pytest node ids. Nothing here may hide a kernel bug: a kernel that
fails on the strict device is fixed, not listed.
"""

GENERATOR = (
    "uses a CPU ember.Generator (or a sampler that draws with one) while outputs land on the "
    "default device; PyTorch raises the same device mismatch under set_default_device"
)
CPU_IDENTITY = (
    "asserts CPU identity (device == cpu, 'cpu' in names, reprs without a device suffix, CPU "
    "legacy types), true only when the default device is the CPU"
)
SHARES_NUMPY_MEMORY = (
    "checks memory shared with NumPy (from_numpy, .numpy(), DLPack, mmap, views of one "
    "storage as NumPy arrays): only CPU tensors share host memory"
)
MIXES_DEVICES = (
    "mixes explicitly CPU tensors (from_numpy, device='cpu') with default-device ones on "
    "purpose, to test the device rules"
)
CPU_KERNEL_NAMES = (
    "matches PyTorch's CPU kernel names in error messages ('..._cpu'); a device kernel's name"
    " differs, as PyTorch's '_cuda' ones do"
)
SUBPROCESSES = (
    "starts subprocesses (spawned workers, a fuzz corpus run) that do not register the strict"
    " device"
)
CPU_TYPE_NAMES = (
    "matches PyTorch's CPU tensor-type names in error messages ('CPUUInt16Type'); on a device "
    "the name is the device's ('CUDAUInt16Type'), as PyTorch's CUDA messages say"
)
CPU_ALLOCATOR = (
    "expects the CPU allocator's out-of-memory message (DefaultCPUAllocator)"
)
NUMPY_LENIENCY = (
    "checks that .numpy() refuses a device tensor, which the strict run's one leniency "
    "(numpy() copies to the host) turns off"
)
MAP_LOCATION = (
    "loads checkpoints with map_location and expects CPU tensors or a CPU default"
)

CPU_AMP = (
    "checks autocast(\"cpu\") and GradScaler(\"cpu\") against PyTorch on tensors made on the "
    "default device: autocast(\"cpu\") casts CPU tensors only, and a CPU scaler keys "
    "found_inf by the gradients' device, as PyTorch's do"
)

CPU_TYPE_NAMES = (
    "compares PyTorch's CPU messages, which name CPU types (a hook's 'was FloatTensor got "
    "DoubleTensor', a grad assignment's 'device type cpu'); a device tensor is named by its "
    "device there"
)
CPU_VALUES = (
    "PyTorch's rules for CPU operands: a NumPy array compared with a CPU tensor, a one-element "
    "CPU value written through a mask (masked_fill), a warning for non-writable NumPy memory "
    "shared by a CPU tensor"
)

EXCEPTIONS: dict[str, str] = {
    "tests/core/test_autograd_checks.py::test_a_tensor_hooks_result_is_checked*": CPU_TYPE_NAMES,
    "tests/core/test_autograd_checks.py::test_a_leaf_hook_is_checked_too*": CPU_TYPE_NAMES,
    "tests/core/test_autograd_checks.py::test_a_nodes_hook_result_is_checked*": CPU_TYPE_NAMES,
    "tests/core/test_autograd_checks.py::test_assigning_a_grad_checks_dtype_then_device_then_"
    "size*": CPU_TYPE_NAMES,
    "tests/core/test_numpy_operands.py::test_numpy_operands_as_pytorch[[]t == array[]]":
        CPU_VALUES,
    "tests/core/test_indexing_parity_probes.py::test_matches_torch[[]mask = 0-dim float into "
    "long[]]": CPU_VALUES,
    "tests/core/test_indexing_parity_probes.py::test_matches_torch[[]mask = 1-elt double[]]":
        CPU_VALUES,
    "tests/core/test_indexing_parity_probes.py::test_mask_fill_with_one_element_value_casts*":
        CPU_VALUES,
    "tests/core/test_factory_parity_probes.py::test_not_writable_warning_matches_torch_when_"
    "fresh*": CPU_VALUES,
    "tests/core/test_overrides_names.py::test_redispatch_function_docstring_examples*":
        "compares the printed output of PyTorch's docstring examples, whose tensor reprs "
        "name a device other than the CPU",
    "tests/core/test_amp_parity_probes.py::test_state_functions_take_device_strings*": CPU_AMP,
    "tests/core/test_amp_parity_probes.py::test_custom_fwd_and_bwd_state_as_pytorch*": CPU_AMP,
    "tests/core/test_amp_parity_probes.py::test_grad_scaler_found_inf_per_device_and_lazy_"
    "scale*": CPU_AMP,
    "tests/nn/test_loss_norm_conv_parity_probes.py::test_embedding_index_dtypes*": CPU_IDENTITY,
    "tests/nn/test_rnn_autocast.py::test_output_dtypes_*": CPU_AMP,
    "tests/nn/test_rnn_autocast.py::test_float16_lstm_runs_in_float16*": CPU_AMP,
    "tests/nn/test_rnn_autocast.py::test_gradients_reach_float32_weights_under_autocast*":
        CPU_AMP,
    "tests/nn/test_rnn_autocast.py::test_input_dtype_check_is_skipped_under_autocast_only*":
        CPU_AMP,
    "tests/core/test_uint_dtypes.py::test_probe_against_numpy_or_pytorchs_error[[]embedding-"
    "uint*": CPU_TYPE_NAMES,
    "tests/core/test_uint_dtypes.py::test_probe_matches_pytorch[[]embedding-uint*":
        CPU_TYPE_NAMES,
    "tests/core/test_accelerator.py::test_tensor_device_properties_match_torch*": CPU_IDENTITY,
    "tests/core/test_accelerator.py::test_tensor_device_properties_on_cpu*": CPU_IDENTITY,
    "tests/core/test_bad_input.py::test_bitwise_checks_shapes_before_dtypes*": CPU_KERNEL_NAMES,
    "tests/core/test_bad_input.py::test_bool_clamp_takes_one_tensor_bound*": CPU_KERNEL_NAMES,
    "tests/core/test_bad_input.py::test_factory_sizes_beyond_memory*": CPU_ALLOCATOR,
    "tests/core/test_data.py::test_distributed_sampler_shards_cover_the_dataset*": GENERATOR,
    # the tutorials' DataLoader(shuffle=True) draws its permutation with a CPU generator
    # (transfer_learning's transforms.ToTensor also gives CPU images, as torchvision's does)
    "tests/integration/test_readme.py::test_readme_example_runs[[]2[]]": GENERATOR,
    "tests/integration/test_tutorial_austen.py::test_austen_classifier*": GENERATOR,
    "tests/integration/test_tutorial_deploy.py::test_deploy_digits*": GENERATOR,
    "tests/integration/test_tutorial_vae.py::test_vae_tutorial*": GENERATOR,
    "tests/integration/test_tutorial_mixed_precision.py::test_mixed_precision_tutorial*":
        GENERATOR + "; and its autocast(\"cpu\") casts CPU tensors, as PyTorch's does",
    "tests/integration/test_tutorials.py::test_fashion_mnist_cnn*": GENERATOR,
    "tests/integration/test_tutorials.py::test_transfer_learning*": GENERATOR,
    "tests/core/test_data.py::test_random_sampler_num_samples_and_replacement*": GENERATOR,
    "tests/core/test_data.py::test_random_sampler_permutation_and_determinism*": GENERATOR,
    "tests/core/test_data.py::test_random_split_lengths_partition_and_determinism*": GENERATOR,
    "tests/core/test_data.py::test_subset_random_sampler*": GENERATOR,
    "tests/core/test_data.py::test_weighted_random_sampler*": GENERATOR,
    "tests/core/test_dataloader.py::test_shuffle_deterministic_under_manual_seed_and_generator*":
        GENERATOR,
    "tests/core/test_dataloader.py::test_spawn_context*": SUBPROCESSES,
    "tests/core/test_dataloader.py::test_worker_seeds_deterministic_under_manual_seed*": GENERATOR,
    "tests/core/test_dataloader_workers_die.py::test_spawned_persistent_workers_outlive_the_thread_that_started_them*":
        SUBPROCESSES,
    "tests/core/test_dtype_device.py::test_gradient_flows_across_devices*": MIXES_DEVICES,
    "tests/core/test_dtype_device.py::test_mixing_devices_raises*": MIXES_DEVICES,
    "tests/core/test_dtype_device.py::test_numpy_only_on_cpu*": NUMPY_LENIENCY,
    "tests/core/test_factory.py::test_as_tensor_is_zero_copy_for_arrays_and_tensors*": CPU_IDENTITY,
    "tests/core/test_factory.py::test_asarray_copy_and_requires_grad*": CPU_IDENTITY,
    "tests/core/test_factory.py::test_factories_honour_the_device_context*": CPU_IDENTITY,
    "tests/core/test_factory.py::test_tensor_infers_dtype_and_shape*": CPU_IDENTITY,
    "tests/core/test_global_settings.py::test_set_printoptions_takes_torchs_arguments_and_prints_alike*":
        CPU_IDENTITY,
    "tests/core/test_global_settings.py::test_typename_matches_torch_under_ember_names*":
        CPU_IDENTITY,
    "tests/core/test_grid.py::test_device_kept*": MIXES_DEVICES,
    "tests/core/test_indexing.py::test_basic_getitem_is_a_view_matching_numpy*":
        SHARES_NUMPY_MEMORY,
    "tests/core/test_indexing.py::test_indexing_keeps_device_and_accepts_cpu_indices*":
        MIXES_DEVICES,
    "tests/core/test_legacy_types.py::test_a_tensor_argument_gives_an_alias*": CPU_IDENTITY,
    "tests/core/test_legacy_types.py::test_constructor_errors_are_pytorchs*": CPU_IDENTITY,
    "tests/core/test_legacy_types.py::test_isinstance_checks_dtype_and_device*": CPU_IDENTITY,
    "tests/core/test_legacy_types.py::test_type_names_and_conversions*": CPU_IDENTITY,
    "tests/core/test_legacy_types.py::test_type_to_the_same_type_is_no_copy*": CPU_IDENTITY,
    "tests/core/test_loss.py::test_device_path*": MIXES_DEVICES,
    "tests/core/test_memory_format.py::test_channels_last_memory_is_nhwc*": SHARES_NUMPY_MEMORY,
    "tests/core/test_pointwise.py::test_copy_across_devices_keeps_gradients*": MIXES_DEVICES,
    "tests/core/test_pointwise.py::test_errors_in_pytorch_words*": CPU_KERNEL_NAMES,
    "tests/core/test_pointwise.py::test_ops_keep_the_device*": MIXES_DEVICES,
    "tests/core/test_pointwise_math_and_statistics.py::test_addcmul_addcdiv_values_and_inplace*":
        CPU_KERNEL_NAMES,
    "tests/core/test_pointwise_math_and_statistics.py::test_gcd_lcm*": CPU_KERNEL_NAMES,
    "tests/core/test_pointwise_math_and_statistics.py::test_ldexp_nextafter_frexp*":
        CPU_KERNEL_NAMES,
    "tests/core/test_pointwise_math_and_statistics.py::test_logaddexp_values_and_errors*":
        CPU_KERNEL_NAMES,
    "tests/core/test_random.py::test_deterministic_under_a_generator*": GENERATOR,
    "tests/core/test_random.py::test_generator_device_must_match*": GENERATOR,
    "tests/core/test_random.py::test_generator_state_round_trip*": GENERATOR,
    "tests/core/test_random.py::test_normal_statistics_for_every_overload*": GENERATOR,
    "tests/core/test_random.py::test_rng_state_save_restore*": GENERATOR,
    "tests/core/test_repr.py::test_default_dtype_changes_the_suffix*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_printoptions_context_restores*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_profiles_and_edgeitems_zero*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_repr*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_repr_of_empty_shapes*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_repr_suffixes*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_repr_summarises_above_the_threshold*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_repr_wraps_long_rows*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_sci_mode_and_linewidth*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_set_printoptions*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_subclass_prefix*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_suffixes_wrap_at_the_line_width*": CPU_IDENTITY,
    "tests/core/test_repr.py::test_tensor_contents_override*": CPU_IDENTITY,
    "tests/core/test_serialization.py::test_cuda_checkpoint_without_gpu_names_map_location*":
        MAP_LOCATION,
    "tests/core/test_serialization.py::test_dlpack_with_numpy_shares_memory*": SHARES_NUMPY_MEMORY,
    "tests/core/test_serialization.py::test_legacy_format_roundtrip*": MAP_LOCATION,
    "tests/core/test_serialization.py::test_map_location_forms*": MAP_LOCATION,
    "tests/core/test_serialization.py::test_numpy_interop_is_zero_copy*": SHARES_NUMPY_MEMORY,
    "tests/core/test_serialization.py::test_views_share_one_storage_and_memory*":
        SHARES_NUMPY_MEMORY,
    "tests/core/test_serialization_fuzz.py::test_hostile_corpus_in_a_subprocess*": SUBPROCESSES,
    # PyTorch's example programs, each run as `python -m ember.as_torch prog.py` in a child
    # process on the CPU: a strict pass would run the same programs again
    "tests/integration/test_pytorch_examples.py::*": SUBPROCESSES,
    "tests/integration/test_pytorch_examples_more.py::*": SUBPROCESSES,
    "tests/core/test_serialization_fuzz.py::test_hostile_corpus_matches_pytorch*": SUBPROCESSES,
    "tests/core/test_serialization_surface.py::test_map_location_errors*": MAP_LOCATION,
    "tests/core/test_serialization_surface.py::test_map_location_forms*": MAP_LOCATION,
    "tests/core/test_serialization_surface.py::test_mmap_tensors_are_backed_by_the_file*":
        SHARES_NUMPY_MEMORY,
    "tests/core/test_strict_device.py::test_implicit_conversion_is_refused*": NUMPY_LENIENCY,
    "tests/core/test_strict_device.py::test_tensors_on_the_strict_device*": NUMPY_LENIENCY,
    "tests/core/test_tensor_basics.py::test_metadata*": CPU_IDENTITY,
    "tests/core/test_tensor_basics.py::test_numpy_shares_memory*": SHARES_NUMPY_MEMORY,
    "tests/core/test_tensor_basics.py::test_numpy_of_a_tensor_requiring_grad_under_no_grad*":
        NUMPY_LENIENCY,
    "tests/core/test_threads.py::test_default_device_is_per_thread*": CPU_IDENTITY,
    "tests/parity/test_data.py::test_random_sampler_structure*": GENERATOR,
    "tests/core/test_torch_rng_streams.py::test_streams_equal_pytorchs[[]generator object*":
        GENERATOR,
    "tests/core/test_torch_rng_streams.py::test_streams_equal_pytorchs[[]DataLoader shuffle*":
        GENERATOR,
    "tests/core/test_torch_rng_streams.py::test_streams_equal_pytorchs[[]state bytes*":
        GENERATOR,
    "tests/core/test_torch_rng_streams.py::test_state_loads_in_either_library*": GENERATOR,
    "tests/parity/test_data.py::test_weighted_sampler_distribution*": GENERATOR,
    "tests/parity/test_pointwise.py::test_errors_raised_as_in_torch*": CPU_KERNEL_NAMES,
    "tests/vision/test_roi_pool.py::test_ps_roi_align_gradcheck*": MIXES_DEVICES,
    "tests/vision/test_roi_pool.py::test_ps_roi_pool_gradcheck*": MIXES_DEVICES,
    "tests/vision/test_roi_pool.py::test_roi_pool_gradcheck_and_node*": MIXES_DEVICES,
}


#: Test files that never touch the default device in the test process: their work runs in
#: child processes that start on the CPU (PyTorch's example programs under ember.as_torch,
#: launcher and MPI ranks, downloads), or they check the source tree (layering, namespaces,
#: the compat report). Under a device run they would repeat the normal run exactly, so they
#: are deselected there (not skipped: nothing in them fails). Measured: a strict run counting
#: the strict arrays each test made found none in any test of these files (2026-12-01); a
#: test that should run on the device belongs in another file.
HOST_ONLY: tuple[str, ...] = (
    "tests/integration/test_pytorch_examples.py",
    "tests/integration/test_pytorch_examples_more.py",
    "tests/integration/test_as_torch.py",
    "tests/integration/test_namespace.py",
    "tests/integration/test_layering.py",
    "tests/integration/test_compat_report.py",
    "tests/integration/test_import_graph.py",
    "tests/integration/test_cpp_op_table.py",
    "tests/distributed/test_launcher.py",
    "tests/distributed/test_faults.py",
    "tests/distributed/test_collectives.py",
    "tests/distributed/test_process_group.py",
    "tests/hub/test_download.py",
    "tests/hub/test_download_limits.py",
)


#: Tests that a device run deselects because they would repeat the normal run's work, node-id
#: patterns (as EXCEPTIONS) with why. Measured on the strict run of 2026-12-01: together 940 of
#: its 2,400 test-seconds, with no kernel of their own on the device.
REPEATS_THE_NORMAL_RUN: dict[str, str] = {
    # test_ops.py draws these samples on the CPU (``e.samples("cpu", ...)``): under a device
    # run they compute the normal run's numbers again (gradgradcheck and gradcheck alone were
    # 440 s). The device side of every op, forward and backward, is test_on_strict_device and
    # test_backward_on_strict_device, which run in both runs; in a device run their expected
    # values (the op on CPU samples while the device is the default) also cover what an op
    # does with CPU inputs under another default device.
    "tests/ops/test_ops.py::test_gradcheck[[]*": "CPU samples: the normal run's gradcheck",
    "tests/ops/test_ops.py::test_gradgradcheck[[]*": "CPU samples: the normal run's "
                                                      "gradgradcheck",
    "tests/ops/test_ops.py::test_forward_matches_torch[[]*": "CPU samples against PyTorch's "
                                                             "CPU results",
    # CPU tensors by design (the CPU ops are the oracle of the fused CUDA kernels, run on a fake
    # CuPy): a strict run counting strict arrays found none in its 195 tests (2026-12-01). Its
    # gpu-marked tests run in tools/gpu_check.sh's first step, without a default device.
    "tests/core/test_cuda_kernels.py::*": "CPU tensors and a fake CuPy, never the device",
    # Full-size architectures, 20-90 M parameters each: parameter counts, state-dict keys,
    # compiled against eager, for every family. Their layers' kernels run on the device in
    # tests/nn and in the smaller model files (test_models_api_and_classic_cnns.py,
    # test_models_classic_more.py, test_models_segmentation.py, test_models_optical_flow.py),
    # which build and run models there; these four took 360 s of the strict run, most of it
    # initialising parameters (trunc_normal_'s erfinv over tens of millions of values).
    "tests/vision/test_models_compiled.py::*": "every family compiled against eager (the "
                                               "normal run); compile on a device: "
                                               "tests/core/test_compile*.py",
    "tests/vision/test_models_video.py::*": "full-size architectures",
    "tests/vision/test_models_swin_maxvit.py::*": "full-size architectures",
    "tests/vision/test_models_modern_architectures.py::*": "full-size architectures",
}

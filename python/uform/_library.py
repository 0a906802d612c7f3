"""Finding libuform.so.4 and declaring the prototypes of every C function the binding calls.

Lookup order: the path in ``UFORM_LIBRARY`` (and nothing else when it is set, so a wrong path is
an error rather than a silent fallback), then ``libuform.so.4`` next to this file (where
``make install`` copies it), then the system loader's search (``LD_LIBRARY_PATH``, ldconfig).

ctypes' ``CDLL`` releases the GIL around every foreign call, so blocking verbs, waits and loads let
other Python threads run; callbacks from C take the GIL back for as long as they run.
"""

import os
from ctypes import CDLL, POINTER, byref, c_char_p, c_double, c_int, c_size_t, c_uint32, c_uint64, c_void_p

from . import _structs as S

SONAME = "libuform.so.4"
ABI_MAJOR = 4


def _candidates():
    explicit = os.environ.get("UFORM_LIBRARY")
    if explicit:
        return [explicit]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    return ([here] if os.path.exists(here) else []) + [SONAME]


def _open() -> CDLL:
    reasons = []
    for candidate in _candidates():
        try:
            return CDLL(candidate)
        except OSError as error:
            reasons.append(f"{candidate}: {error}")
    raise ImportError(
        "uform: cannot load the UForm library (set UFORM_LIBRARY to the path of libuform.so.4, or "
        "run `make install`); tried " + "; ".join(reasons)
    )


lib = _open()
path = lib._name

_P = c_void_p  # every handle and every pointer the binding fills itself


def _declare(name, restype, *argtypes):
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function


# Library and statuses.
_declare("uform_version", None, POINTER(c_int), POINTER(c_int), POINTER(c_int))
_declare("uform_status_name", c_char_p, c_int)
_declare("uform_outcome_status", c_int, _P)
_declare("uform_outcome_wait", c_int, _P)
_declare("uform_outcome_format", c_size_t, _P, c_char_p, c_size_t)
_declare("uform_cpu_class_detect", c_int)
_declare("uform_cpu_class_supported", c_int, c_int)
_declare("uform_cpu_class_name", c_char_p, c_int)
_declare("uform_gpu_devices", c_int, _P, c_size_t, POINTER(c_size_t))

# Executors and arenas.
_declare("uform_executor_for_ram", c_int, _P, c_size_t, c_size_t, POINTER(c_void_p), _P)
_declare("uform_executor_drain", c_int, _P, c_int, _P)
_declare("uform_executor_threads", c_size_t, _P)
_declare("uform_executor_cpu_class", c_int, _P)
_declare("uform_executor_free", None, _P)
_declare("uform_arena_for_executor", c_int, _P, POINTER(c_void_p), _P)
_declare("uform_arena_for_host", c_int, POINTER(c_void_p), _P)
_declare("uform_arena_generation", c_uint64, _P)
_declare("uform_arena_capacity", c_size_t, _P)
_declare("uform_arena_free", None, _P)
_declare("uform_scalar_row_bytes", c_size_t, c_int, c_size_t)
_declare("uform_matrix_check", c_int, _P)
_declare("uform_matrix_row", c_int, _P, c_size_t, POINTER(c_void_p))
_declare("uform_tape_validate", c_int, _P, _P)

# Models and verbs: every verb takes a pointer to its request.
_declare("uform_model_load_ram", c_int, _P, c_char_p, _P, POINTER(c_void_p), _P)
_declare("uform_model_free", None, _P)
_declare("uform_model_quantize", c_int, c_char_p, c_char_p, _P)
_declare("uform_text_tokenize", c_int, _P, c_char_p, c_size_t, POINTER(c_uint32), c_size_t, POINTER(c_size_t), _P)
_declare("uform_model_tokens", c_int, _P, c_int, c_char_p, c_size_t, POINTER(c_size_t), _P)
for _verb in (
    "uform_model_describe",
    "uform_text_encode",
    "uform_image_encode",
    "uform_image_encode_pixels",
    "uform_video_encode",
    "uform_audio_encode",
    "uform_audio_encode_samples",
    "uform_text_choose",
):
    _declare(_verb, c_int, _P)

# The mesh.
_declare("uform_mesh_bootstrap", c_int, _P, _P, POINTER(c_void_p), _P)
_declare("uform_mesh_launch_read", c_int, _P, _P)
_declare("uform_mesh_launcher_name", c_char_p, c_int)
_declare("uform_mesh_describe", c_int, _P, _P)
_declare("uform_mesh_free", None, _P)

# The trainer.
_declare("uform_trainer_init_ram", c_int, _P, _P, POINTER(c_void_p), _P)
_declare("uform_trainer_free", None, _P)
_declare("uform_trainer_describe", c_int, _P, _P)
_declare("uform_trainer_user_metadata", c_char_p, _P)
_declare("uform_trainer_step", c_int, _P)
_declare("uform_trainer_save", c_int, _P)
_declare("uform_trainer_snapshot", c_int, _P, _P, POINTER(c_void_p), _P)

_declare("uform_trainer_schedule", c_double, _P, c_double, c_double)
_declare("uform_compute_best", c_int, c_int)

# Media preparation, indexes and data (datasets, loaders, recall, the index pipeline).
_declare("uform_media_prepare", c_int, _P)
_declare("uform_prepared_encode", c_int, _P)
_declare("uform_index_open", c_int, c_char_p, _P, POINTER(c_void_p), _P)
_declare("uform_index_free", None, _P)
_declare("uform_index_describe", c_int, _P, _P)
_declare("uform_index_item", c_int, _P, c_size_t, _P, POINTER(c_void_p), POINTER(c_size_t))
_declare("uform_index_metadata", c_char_p, _P, c_char_p)
_declare("uform_index_search", c_int, _P)
_declare("uform_index_ann_build", c_int, _P, c_char_p, _P, _P)
_declare("uform_index_ann_open", c_int, _P, c_char_p, POINTER(c_void_p), _P)
_declare("uform_index_ann_free", None, _P)
_declare("uform_index_ann_describe", c_int, _P, _P)
_declare("uform_index_ann_search", c_int, _P)
_declare("uform_index_build", c_int, _P)
_declare("uform_index_builder_create_vectors", c_int, c_size_t, c_int, c_char_p, POINTER(c_void_p), _P)
_declare("uform_index_builder_add_vectors", c_int, _P, c_int, _P, c_int, c_size_t, c_size_t, c_size_t, _P, c_uint32, _P)
_declare("uform_index_builder_write", c_int, _P, c_char_p, _P, c_size_t, _P)
_declare("uform_index_builder_free", None, _P)
_declare("uform_index_builder_gather", c_int, _P, _P, POINTER(c_void_p), _P)
_declare("uform_index_builder_write_members", c_int, _P, _P, c_char_p, _P, c_size_t, _P)
_declare("uform_index_ann_build_members", c_int, _P, _P, _P, c_char_p, _P, _P)
_declare("uform_model_fingerprint", c_int, _P, _P, _P)
_declare("uform_dataset_open", c_int, _P, POINTER(c_void_p), _P, _P)
_declare("uform_dataset_free", None, _P)
_declare("uform_dataset_describe", c_int, _P, _P)
_declare("uform_dataset_read", c_int, _P)
_declare("uform_loader_open", c_int, _P, POINTER(c_void_p), _P)
_declare("uform_loader_free", None, _P)
_declare("uform_loader_next", c_int, _P)
_declare("uform_loader_cursor", c_int, _P, c_char_p, c_size_t, POINTER(c_size_t), _P)
_declare("uform_loader_stats", None, _P, _P, _P, c_size_t, POINTER(c_size_t))
_declare("uform_recall", c_int, _P)
_declare("uform_evaluate", c_int, _P)
_declare("uform_trainer_fit", c_int, _P)

# The tensor-program session and its builder.
_declare("uform_session_status_name", c_char_p, c_int)
_declare("uform_session_init", c_int, POINTER(c_void_p))
_declare("uform_session_free", None, _P)
_declare("uform_session_compile", c_int, _P, _P, c_size_t, POINTER(S.ProgramHandle))
_declare("uform_session_inputs", c_int, _P, S.ProgramHandle, POINTER(c_void_p), POINTER(c_size_t))
_declare("uform_session_outputs", c_int, _P, S.ProgramHandle, POINTER(c_void_p), POINTER(c_size_t))
_declare("uform_session_scratch_size", c_size_t, _P, S.ProgramHandle)
_declare(
    "uform_session_invoke", c_int, _P, S.ProgramHandle, _P, _P, c_size_t, _P, _P, c_size_t, _P, c_size_t
)
_declare("uform_session_release", c_int, _P, S.ProgramHandle)
_declare("uform_session_last_cause", c_char_p, _P)
_declare("uform_program_builder_init", c_int, POINTER(c_void_p))
_declare("uform_program_builder_free", None, _P)
_declare("uform_program_builder_parameter", c_int, _P, c_char_p, c_int, c_size_t, _P, POINTER(c_uint32))
_declare("uform_program_builder_constant", c_int, _P, c_int, c_size_t, _P, _P, c_size_t, POINTER(c_uint32))
_declare(
    "uform_program_builder_operation",
    c_int,
    _P,
    c_int,
    _P,
    c_size_t,
    _P,
    c_size_t,
    c_int,
    c_size_t,
    _P,
    POINTER(c_uint32),
)
_declare("uform_program_builder_output", c_int, _P, c_char_p, c_uint32)
_declare("uform_program_builder_finish", c_int, _P, POINTER(c_void_p), POINTER(c_size_t))
_declare("uform_program_builder_type", c_int, _P, c_uint32, POINTER(c_int), POINTER(c_size_t), _P)
_declare("uform_program_builder_cause", c_char_p, _P)


def _check_version():
    major = c_int()
    lib.uform_version(byref(major), None, None)
    if major.value != ABI_MAJOR:
        raise ImportError(f"uform: {path} is UForm {major.value}, this binding needs UForm {ABI_MAJOR}")


_check_version()

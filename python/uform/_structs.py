"""ctypes mirrors of the structs of include/uform/uform.h, field for field.

Every struct here is listed in ``MIRRORED`` under its C name (the one mapping from mirror to C type);
tests/python/check_mirrors.py (the CTest test_python_mirrors) probes the C compiler with the fields
named here and compares each struct's size and every field's offset, size and kind, so a change to
the header that is not made here fails the tests instead of corrupting memory. These two files are
the only ctypes mirrors of uform.h: write a new one here and add it to ``MIRRORED``.

C enums are ``int``-sized; handles are opaque pointers (``c_void_p``). Pointers the binding fills
from NumPy buffers are declared ``c_void_p`` so an address can be stored without a cast.
"""

from ctypes import (
    CFUNCTYPE,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)

OUTCOME_FUNCTION_CAPACITY = 48
OUTCOME_MESSAGE_CAPACITY = 400

# uform_continuation_t callback(size_t completed, size_t total, void *state)
ProgressCallback = CFUNCTYPE(c_int, c_size_t, c_size_t, c_void_p)


class Outcome(Structure):
    """uform_outcome_t: the status word, the failing function's name and a message, inline."""

    _fields_ = [
        ("status", c_uint32),
        ("reserved", c_uint32),
        ("function", c_char * OUTCOME_FUNCTION_CAPACITY),
        ("message", c_char * OUTCOME_MESSAGE_CAPACITY),
    ]


class GpuDevice(Structure):
    """uform_gpu_device_t: one GPU as uform_gpu_devices lists it."""

    _fields_ = [
        ("vendor", c_int),
        ("vendor_ordinal", c_size_t),
        ("gpu_class", c_int),
        ("compute_units", c_size_t),
        ("memory_bytes", c_uint64),
        ("name", c_char * 64),
    ]


class Progress(Structure):
    """uform_progress_t: a callback, its state and how many reports at most."""

    _fields_ = [("callback", ProgressCallback), ("state", c_void_p), ("steps", c_size_t)]


class RamOptions(Structure):
    """uform_ram_options_t: NUMA nodes, the CPU class and (for loads) the compute type."""

    _fields_ = [
        ("memory_domains", c_void_p),
        ("memory_domains_count", c_size_t),
        ("cpu_class", c_int),
        ("compute", c_int),
    ]


class Matrix(Structure):
    """uform_matrix_t: a view of rows in an arena, valid while the arena keeps its generation."""

    _fields_ = [
        ("data", c_void_p),
        ("rows", c_size_t),
        ("columns", c_size_t),
        ("stride_bytes", c_size_t),
        ("scalar", c_int),
        ("arena", c_void_p),
        ("generation", c_uint64),
    ]


class Rows(Structure):
    """uform_rows_t: ragged rows; item i owns rows offsets[i] .. offsets[i + 1] of the matrix."""

    _fields_ = [("matrix", Matrix), ("offsets", c_void_p), ("count", c_size_t)]


class Tape(Structure):
    """uform_tape_t: count items end to end in data, with count + 1 byte offsets.

    ``data`` is declared ``c_char_p`` (same layout as ``const void *``) because that field type
    accepts both a ``bytes`` object (pointing at its buffer, ~0.1 µs) and an integer address.
    """

    _fields_ = [("data", c_char_p), ("offsets", c_void_p), ("count", c_size_t)]


class TowerDescription(Structure):
    """uform_tower_description_t: the transformer that encodes one modality."""

    _fields_ = [("hidden", c_size_t), ("depth", c_size_t), ("heads", c_size_t), ("mlp", c_size_t)]


class ModelDescription(Structure):
    """uform_model_description_t: everything uform_model_describe answers."""

    _fields_ = [
        ("size", c_char * 16),
        ("hidden", c_size_t),
        ("depth", c_size_t),
        ("heads", c_size_t),
        ("mlp", c_size_t),
        ("embedding", c_size_t),
        ("matryoshka", c_size_t * 8),
        ("matryoshka_count", c_size_t),
        ("temperature_groups", c_size_t),
        ("modalities", c_uint),
        ("text_bytes", c_size_t),
        ("image_size", c_size_t),
        ("image_patch", c_size_t),
        ("video_size", c_size_t),
        ("video_patch", c_size_t),
        ("video_frames", c_size_t),
        ("video_tubelet", c_size_t),
        ("audio_rate", c_size_t),
        ("audio_seconds", c_size_t),
        ("audio_mels", c_size_t),
        ("parameters", c_uint64),
        ("weight_bytes", c_uint64),
        ("residency", c_int),
        ("cpu_class", c_int),
        ("compute", c_int),
        ("family", c_char * 32),
        ("tokenizer", c_char * 32),
        ("text_tokens", c_size_t),
        ("towers", TowerDescription * 4),
    ]


class ModelDescribe(Structure):
    """uform_model_describe_t: the describe request."""

    _fields_ = [("model", c_void_p), ("outcome", Outcome), ("description", ModelDescription)]


class EncodeStats(Structure):
    """uform_encode_stats_t: what a call measured."""

    _fields_ = [
        ("items", c_size_t),
        ("tokens", c_size_t),
        ("input_bytes", c_uint64),
        ("decode_seconds", c_double),
        ("compute_seconds", c_double),
        ("flops", c_double),
        ("arena_bytes", c_size_t),
    ]


class EncodeConfig(Structure):
    """uform_encode_config_t: output scalar, progress, stats and the Matryoshka prefix."""

    _fields_ = [
        ("outputs_scalar", c_int),
        ("progress", Progress),
        ("stats", c_void_p),
        ("dimensions", c_size_t),
    ]


class Encoded(Structure):
    """uform_encoded_t: the views an encode answers."""

    _fields_ = [("embeddings", Matrix), ("token_vectors", Rows), ("states", Rows)]


def _request(inputs):
    """The fields of an encode request, with the verb's input fields (name, type) in the middle."""
    return (
        [("model", c_void_p), ("executor", c_void_p), ("completion", c_int)]
        + inputs
        + [
            ("outputs", c_int),
            ("arena", c_void_p),
            ("config", EncodeConfig),
            ("outcome", Outcome),
            ("encoded", Encoded),
        ]
    )


class TextEncode(Structure):
    """uform_text_encode_t."""

    _fields_ = _request([("texts", Tape)])


class ImageEncode(Structure):
    """uform_image_encode_t."""

    _fields_ = _request([("images", Tape)])


class ImageEncodePixels(Structure):
    """uform_image_encode_pixels_t."""

    _fields_ = _request([("pixels", Tape), ("heights", c_void_p), ("widths", c_void_p)])


class VideoEncode(Structure):
    """uform_video_encode_t."""

    _fields_ = _request([("videos", Tape)])


class AudioEncode(Structure):
    """uform_audio_encode_t."""

    _fields_ = _request([("recordings", Tape)])


class AudioEncodeSamples(Structure):
    """uform_audio_encode_samples_t."""

    _fields_ = _request([("samples", Tape), ("sample_rate", c_size_t)])


class TextChoose(Structure):
    """uform_text_choose_t."""

    _fields_ = [
        ("model", c_void_p),
        ("executor", c_void_p),
        ("completion", c_int),
        ("texts", Tape),
        ("choices", Tape),
        ("groups", c_void_p),
        ("arena", c_void_p),
        ("config", EncodeConfig),
        ("outcome", Outcome),
        ("probabilities", Rows),
    ]


class MeshOptions(Structure):
    """uform_mesh_options_t: how this process joins a mesh."""

    _fields_ = [
        ("host_domain_index", c_size_t),
        ("host_domain_count", c_size_t),
        ("gpus_per_multimem_domain", c_size_t),
        ("directory", c_char_p),
        ("job", c_char_p),
        ("timeout_seconds", c_double),
        ("address", c_char_p),
        ("trainer_config", c_void_p),
        ("agreement", c_char_p),
        ("rendezvous", c_char_p),
        ("launcher", c_int),
        ("overlap", c_int),
    ]


class MeshLaunch(Structure):
    """uform_mesh_launch_t: what a launcher's variables say about this process."""

    _fields_ = [
        ("launcher", c_int),
        ("index", c_size_t),
        ("count", c_size_t),
        ("local_index", c_size_t),
        ("local_count", c_size_t),
        ("threads", c_size_t),
        ("job", c_char * 129),
        ("rendezvous", c_char * 320),
        ("rendezvous_from", c_char * 96),
        ("variables", c_char * 96),
    ]


class MeshDescription(Structure):
    """uform_mesh_description_t: the shape of a mesh."""

    _fields_ = [
        ("gpus_per_host_domain", c_size_t),
        ("gpus_per_multimem_domain", c_size_t),
        ("gpus_per_colocated_domain", c_size_t),
        ("host_domain_index", c_size_t),
        ("first_gpu_index", c_size_t),
        ("multimem_tier", c_int),
        ("gpu_class", c_int),
        ("members_per_host_domain", c_size_t),
        ("members_total", c_size_t),
        ("first_member_index", c_size_t),
        ("launcher", c_int),
        ("local_member_index", c_size_t),
        ("local_members", c_size_t),
        ("overlap", c_int),
    ]


class TrainerConfig(Structure):
    """uform_trainer_config_t: architecture, optimizer and run settings of a trainer."""

    _fields_ = [
        ("size", c_char * 16),
        ("hidden", c_size_t),
        ("depth", c_size_t),
        ("heads", c_size_t),
        ("mlp", c_size_t),
        ("embedding", c_size_t),
        ("matryoshka", c_size_t * 8),
        ("matryoshka_count", c_size_t),
        ("temperature_groups", c_size_t),
        ("modalities", c_uint),
        ("text_bytes", c_size_t),
        ("image_size", c_size_t),
        ("image_patch", c_size_t),
        ("video_size", c_size_t),
        ("video_patch", c_size_t),
        ("video_frames", c_size_t),
        ("video_tubelet", c_size_t),
        ("audio_seconds", c_size_t),
        ("audio_mels", c_size_t),
        ("learning_rate", c_double),
        ("beta1", c_double),
        ("beta2", c_double),
        ("epsilon", c_double),
        ("weight_decay", c_double),
        ("clip_norm", c_double),
        ("warmup_steps", c_uint64),
        ("total_steps", c_uint64),
        ("contrastive_weight", c_double),
        ("choice_weight", c_double),
        ("seed", c_uint64),
        ("compute", c_int),
        ("cpu_class", c_int),
        ("resume", c_char_p),
        ("mesh", c_void_p),
    ]


class TrainerDescription(Structure):
    """uform_trainer_description_t: the trained model, the steps so far and the resolved optimizer."""

    _fields_ = [
        ("model", ModelDescription),
        ("steps", c_uint64),
        ("learning_rate", c_double),
        ("beta1", c_double),
        ("beta2", c_double),
        ("epsilon", c_double),
        ("weight_decay", c_double),
        ("clip_norm", c_double),
        ("warmup_steps", c_uint64),
        ("total_steps", c_uint64),
        ("contrastive_weight", c_double),
        ("choice_weight", c_double),
        ("seed", c_uint64),
    ]


class Relations(Structure):
    """uform_relations_t: positive pairs of bags and their temperature groups."""

    _fields_ = [("lefts", c_void_p), ("rights", c_void_p), ("groups", c_void_p), ("count", c_size_t)]


class TrainerStats(Structure):
    """uform_trainer_stats_t: what a step measured."""

    _fields_ = [
        ("items", c_size_t),
        ("sequences", c_size_t),
        ("tokens", c_size_t),
        ("decode_seconds", c_double),
        ("forward_seconds", c_double),
        ("backward_seconds", c_double),
        ("optimizer_seconds", c_double),
        ("flops", c_double),
        ("exchange_wait_seconds", c_double),
        ("exchange_seconds", c_double),
        ("chunks", c_size_t),
    ]


class TrainerStep(Structure):
    """uform_trainer_step_t: one optimisation step's request."""

    _fields_ = [
        ("trainer", c_void_p),
        ("completion", c_int),
        ("modalities", c_void_p),
        ("contents", Tape),
        ("bags", c_void_p),
        ("bag_count", c_size_t),
        ("sides", c_void_p),
        ("relations", Relations),
        ("choices", Tape),
        ("choice_targets", c_void_p),
        ("arena", c_void_p),
        ("outputs_scalar", c_int),
        ("progress", Progress),
        ("stats", c_void_p),
        ("learning_rate_override", c_double),
        ("outcome", Outcome),
        ("loss", c_double),
        ("contrastive", c_double),
        ("choice", c_double),
        ("learning_rate", c_double),
        ("grad_norm", c_double),
        ("step", c_uint64),
        ("temperatures", Matrix),
        ("bag_embeddings", Matrix),
        ("accumulate", c_size_t),
        ("prepared", c_void_p * 4),
        ("failed_content", c_size_t),
        ("failed_member", c_size_t),
    ]


class TrainerSave(Structure):
    """uform_trainer_save_t: a request to write the trainer's checkpoint."""

    _fields_ = [
        ("trainer", c_void_p),
        ("completion", c_int),
        ("path", c_char_p),
        ("optimizer", c_int),
        ("user_metadata", c_char_p),
        ("progress", Progress),
        ("outcome", Outcome),
    ]


class ProgramHandle(Structure):
    """uform_program_t: a program's slot and that slot's generation, passed by value."""

    _fields_ = [("index", c_uint32), ("generation", c_uint32)]


class Descriptor(Structure):
    """uform_descriptor_t: one parameter or output of a compiled program."""

    _fields_ = [
        ("dtype", c_int),
        ("rank", c_size_t),
        ("dims", c_void_p),
        ("byte_size", c_size_t),
        ("alignment", c_size_t),
    ]


# C name -> mirror; tests/python/check_mirrors.py walks this table.
MIRRORED = {
    "uform_outcome_t": Outcome,
    "uform_gpu_device_t": GpuDevice,
    "uform_progress_t": Progress,
    "uform_ram_options_t": RamOptions,
    "uform_matrix_t": Matrix,
    "uform_rows_t": Rows,
    "uform_tape_t": Tape,
    "uform_model_description_t": ModelDescription,
    "uform_tower_description_t": TowerDescription,
    "uform_model_describe_t": ModelDescribe,
    "uform_encode_stats_t": EncodeStats,
    "uform_encode_config_t": EncodeConfig,
    "uform_encoded_t": Encoded,
    "uform_text_encode_t": TextEncode,
    "uform_image_encode_t": ImageEncode,
    "uform_image_encode_pixels_t": ImageEncodePixels,
    "uform_video_encode_t": VideoEncode,
    "uform_audio_encode_t": AudioEncode,
    "uform_audio_encode_samples_t": AudioEncodeSamples,
    "uform_text_choose_t": TextChoose,
    "uform_mesh_options_t": MeshOptions,
    "uform_mesh_launch_t": MeshLaunch,
    "uform_mesh_description_t": MeshDescription,
    "uform_trainer_config_t": TrainerConfig,
    "uform_trainer_description_t": TrainerDescription,
    "uform_relations_t": Relations,
    "uform_trainer_stats_t": TrainerStats,
    "uform_trainer_step_t": TrainerStep,
    "uform_trainer_save_t": TrainerSave,
    "uform_program_t": ProgramHandle,
    "uform_descriptor_t": Descriptor,
}


def _merge_data_structs():
    from . import _data_structs  # the Data section's mirrors, in a file of their own

    MIRRORED.update(_data_structs.MIRRORED)


_merge_data_structs()

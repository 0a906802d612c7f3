"""ctypes mirrors of the Data, Indexes and Media-preparation structs of include/uform/uform.h,
field for field; merged into ``_structs.MIRRORED`` so tests/python/check_mirrors.py checks them."""

from ctypes import CFUNCTYPE, Structure, c_char, c_char_p, c_double, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ._structs import (
    OUTCOME_MESSAGE_CAPACITY,
    Encoded,
    EncodeConfig,
    Matrix,
    Outcome,
    Progress,
    Tape,
    TrainerStep,
)

DATA_ERROR_PATH_CAPACITY = 512
FINGERPRINT_CAPACITY = 33


class DataError(Structure):
    """uform_data_error_t: where a sample failed (line, shard, content, source, key) and why."""

    _fields_ = [
        ("status", c_int),
        ("line", c_size_t),
        ("shard", c_size_t),
        ("content", c_size_t),
        ("source", c_char * DATA_ERROR_PATH_CAPACITY),
        ("key", c_char * DATA_ERROR_PATH_CAPACITY),
        ("message", c_char * OUTCOME_MESSAGE_CAPACITY),
    ]


class DatasetOptions(Structure):
    _fields_ = [
        ("source", c_int),
        ("path", c_char_p),
        ("paths", c_void_p),
        ("path_count", c_size_t),
        ("seed", c_uint64),
        ("shuffle_buffer", c_size_t),
        ("sequential", c_int),
        ("partitions", c_size_t),
        ("skip_bad", c_int),
        ("hidden", c_int),
        ("max_sample_bytes", c_size_t),
    ]


class DatasetDescription(Structure):
    _fields_ = [
        ("source", c_int),
        ("shards", c_size_t),
        ("samples", c_size_t),
        ("pairs", c_size_t * 4),
        ("choices", c_size_t),
        ("items", c_size_t),
        ("bad", c_size_t),
        ("fingerprint", c_char * 17),
    ]


class DatasetItem(Structure):
    _fields_ = [
        ("modality", c_int),
        ("key", c_void_p),
        ("key_length", c_size_t),
        ("bytes", c_void_p),
        ("size", c_size_t),
        ("text", c_void_p),
        ("text_length", c_size_t),
        ("ordinal", c_size_t),
    ]


class DatasetRead(Structure):
    _fields_ = [
        ("dataset", c_void_p),
        ("rewind", c_int),
        ("skip", c_size_t),
        ("outcome", Outcome),
        ("done", c_int),
        ("item", DatasetItem),
        ("error", DataError),
    ]


class LoaderOptions(Structure):
    _fields_ = [
        ("dataset", c_void_p),
        ("trainer", c_void_p),
        ("batch", c_size_t),
        ("member", c_size_t),
        ("members", c_size_t),
        ("ahead", c_size_t),
        ("decode_threads", c_size_t),
        ("cursor", c_char_p),
    ]


class LoaderNext(Structure):
    _fields_ = [
        ("loader", c_void_p),
        ("step", c_void_p),
        ("outcome", Outcome),
        ("done", c_int),
        ("samples", c_size_t),
        ("twins", c_int),
        ("error", DataError),
    ]


class LoaderStats(Structure):
    _fields_ = [
        ("batches", c_size_t),
        ("samples", c_size_t),
        ("epoch", c_uint64),
        ("skipped", c_size_t),
        ("wait_seconds", c_double),
        ("read_seconds", c_double),
        ("decode_seconds", c_double),
        ("bytes_read", c_uint64),
    ]


class Recall(Structure):
    _fields_ = [
        ("queries", c_void_p),
        ("queries_count", c_size_t),
        ("columns", c_size_t),
        ("candidates", c_void_p),
        ("candidates_count", c_size_t),
        ("query_labels", c_void_p),
        ("candidate_labels", c_void_p),
        ("ks", c_void_p),
        ("ks_count", c_size_t),
        ("outcome", Outcome),
        ("recall", c_double * 8),
    ]


class Evaluation(Structure):
    _fields_ = [("pairs", c_size_t), ("text_to_media", c_double * 8), ("media_to_text", c_double * 8)]


class Evaluate(Structure):
    _fields_ = [
        ("model", c_void_p),
        ("executor", c_void_p),
        ("dataset", c_void_p),
        ("arena", c_void_p),
        ("batch", c_size_t),
        ("ks", c_void_p),
        ("ks_count", c_size_t),
        ("progress", Progress),
        ("outcome", Outcome),
        ("results", Evaluation * 4),
        ("error", DataError),
    ]


class IndexBuild(Structure):
    _fields_ = [
        ("model", c_void_p),
        ("executor", c_void_p),
        ("decoder", c_void_p),
        ("datasets", c_void_p),
        ("dataset_count", c_size_t),
        ("out", c_char_p),
        ("errors_path", c_char_p),
        ("dimensions", c_size_t),
        ("scalar", c_int),
        ("modalities", c_uint),
        ("batch", c_size_t),
        ("checkpoint", c_size_t),
        ("resume", c_int),
        ("progress", Progress),
        ("mesh", c_void_p),
        ("ann", c_void_p),
        ("ann_path", c_char_p),
        ("outcome", Outcome),
        ("indexed", c_size_t),
        ("failed", c_size_t),
        ("skipped", c_size_t),
        ("duplicates", c_size_t),
        ("resumed", c_size_t),
        ("error", DataError),
    ]


class IndexDescription(Structure):
    _fields_ = [
        ("count", c_size_t),
        ("counts", c_size_t * 4),
        ("dimensions", c_size_t),
        ("scalar", c_int),
        ("fingerprint", c_char * FINGERPRINT_CAPACITY),
    ]


class IndexHit(Structure):
    _fields_ = [("item", c_uint64), ("score", c_float), ("modality", c_int)]


class IndexSearch(Structure):
    _fields_ = [
        ("index", c_void_p),
        ("executor", c_void_p),
        ("completion", c_int),
        ("queries", c_void_p),
        ("queries_count", c_size_t),
        ("queries_columns", c_size_t),
        ("queries_stride", c_size_t),
        ("top", c_size_t),
        ("modalities", c_uint),
        ("candidates", c_size_t),
        ("progress", Progress),
        ("arena", c_void_p),
        ("outcome", Outcome),
        ("hits", c_void_p),
        ("hits_per_query", c_size_t),
    ]


class IndexAnnOptions(Structure):
    _fields_ = [("recipe", c_char_p), ("train_rows", c_size_t), ("threads", c_size_t), ("ondisk", c_int)]


class IndexAnnDescription(Structure):
    _fields_ = [
        ("count", c_size_t),
        ("dimensions", c_size_t),
        ("lists", c_size_t),
        ("code_bytes", c_size_t),
        ("train_rows", c_size_t),
        ("graph", c_int),
        ("recipe", c_char * 128),
    ]


class IndexAnnSearch(Structure):
    _fields_ = [
        ("ann", c_void_p),
        ("executor", c_void_p),
        ("completion", c_int),
        ("queries", c_void_p),
        ("queries_count", c_size_t),
        ("queries_columns", c_size_t),
        ("queries_stride", c_size_t),
        ("top", c_size_t),
        ("modalities", c_uint),
        ("nprobe", c_size_t),
        ("ef", c_size_t),
        ("rerank", c_size_t),
        ("progress", Progress),
        ("arena", c_void_p),
        ("outcome", Outcome),
        ("hits", c_void_p),
        ("hits_per_query", c_size_t),
    ]


class Prepared(Structure):
    _fields_ = [
        ("modality", c_int),
        ("count", c_size_t),
        ("rows_per_item", c_size_t),
        ("rows", Matrix),
        ("item_outcomes", c_void_p),
        ("failed", c_size_t),
    ]


class MediaPrepare(Structure):
    _fields_ = [
        ("model", c_void_p),
        ("executor", c_void_p),
        ("completion", c_int),
        ("modality", c_int),
        ("files", Tape),
        ("arena", c_void_p),
        ("progress", Progress),
        ("outcome", Outcome),
        ("prepared", Prepared),
    ]


class PreparedEncode(Structure):
    _fields_ = [
        ("model", c_void_p),
        ("executor", c_void_p),
        ("completion", c_int),
        ("prepared", c_void_p),
        ("outputs", c_int),
        ("arena", c_void_p),
        ("config", EncodeConfig),
        ("outcome", Outcome),
        ("encoded", Encoded),
    ]


# uform_fit_callback_t: (const uform_trainer_fit_t *fit, uform_fit_event_t event, void *state) -> continuation.
FitCallback = CFUNCTYPE(c_int, c_void_p, c_int, c_void_p)


class TrainerFit(Structure):
    """uform_trainer_fit_t: the training loop's request (uform.h, "The training loop")."""

    _fields_ = [
        ("trainer", c_void_p),
        ("dataset", c_void_p),
        ("batch", c_size_t),
        ("member", c_size_t),
        ("members", c_size_t),
        ("ahead", c_size_t),
        ("decode_threads", c_size_t),
        ("accumulate", c_size_t),
        ("steps", c_uint64),
        ("budget_seconds", c_double),
        ("eval_datasets", c_void_p),
        ("eval_count", c_size_t),
        ("eval_every", c_uint64),
        ("eval_compute", c_int),
        ("eval_ks", c_void_p),
        ("eval_ks_count", c_size_t),
        ("save_path", c_char_p),
        ("save_every", c_uint64),
        ("resume", c_int),
        ("callback", FitCallback),
        ("state", c_void_p),
        ("step_progress", Progress),
        ("outcome", Outcome),
        ("order", c_int),
        ("order_reason", c_char * OUTCOME_MESSAGE_CAPACITY),
        ("loader", c_void_p),
        ("step", TrainerStep),
        ("twins", c_int),
        ("steps_done", c_uint64),
        ("samples", c_uint64),
        ("loss", c_double),
        ("elapsed_seconds", c_double),
        ("stepping_seconds", c_double),
        ("loader_stats", LoaderStats),
        ("evaluation_step", c_uint64),
        ("evaluation_set", c_size_t),
        ("evaluation", Evaluation * 4),
        ("saved_step", c_uint64),
        ("saved_final", c_int),
        ("saved_at_failure", c_int),
        ("error", DataError),
    ]


MIRRORED = {
    "uform_data_error_t": DataError,
    "uform_trainer_fit_t": TrainerFit,
    "uform_dataset_options_t": DatasetOptions,
    "uform_dataset_description_t": DatasetDescription,
    "uform_dataset_item_t": DatasetItem,
    "uform_dataset_read_t": DatasetRead,
    "uform_loader_options_t": LoaderOptions,
    "uform_loader_next_t": LoaderNext,
    "uform_loader_stats_t": LoaderStats,
    "uform_recall_t": Recall,
    "uform_evaluation_t": Evaluation,
    "uform_evaluate_t": Evaluate,
    "uform_index_build_t": IndexBuild,
    "uform_index_description_t": IndexDescription,
    "uform_index_hit_t": IndexHit,
    "uform_index_search_t": IndexSearch,
    "uform_index_ann_options_t": IndexAnnOptions,
    "uform_index_ann_description_t": IndexAnnDescription,
    "uform_index_ann_search_t": IndexAnnSearch,
    "uform_prepared_t": Prepared,
    "uform_media_prepare_t": MediaPrepare,
    "uform_prepared_encode_t": PreparedEncode,
}

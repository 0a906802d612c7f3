"""UForm 4 for Python: ``import uform`` over the C ABI of ``libuform.so.4`` (ctypes + NumPy).

    import uform

    model = uform.Model.load_ram(None, "tiny.safetensors")          # None: load on this thread
    texts = model.text_encode(["a photo of a cat", "a photo of a dog"])
    print(texts.embeddings @ texts.embeddings.T)                     # cosines: rows are unit vectors

    with uform.Executor.for_ram(threads=2) as executor:
        images = model.on(executor).image_encode(["cat.jpg"])        # blocks; other threads run
        pending = model.deferred(executor).text_encode("a cat")      # answers a Deferred at once
        print(pending.wait().embeddings.shape)

A ``Trainer`` trains such models (its verbs run only on its executor: ``trainer.on(executor).step``),
alone or with other processes through a ``Mesh``; ``trainer.fit(uform.Dataset.open(...), steps=...)``
trains from a manifest, a folder or WebDataset shards. ``uform.Index.build`` and ``uform.Index.open``
make and search index files.
Receivers choose where a verb runs: the model itself (the calling thread), ``model.on(executor)``
(blocking on the executor's threads) or ``model.deferred(executor)`` (a ``Deferred``). Results are
NumPy arrays the caller owns, or zero-copy views into an ``Arena`` passed as ``arena=``. Every
failure raises a ``uform.Error`` subclass carrying the C status, the function and its message.
The library is found through ``UFORM_LIBRARY``, then next to this package, then the system loader.
"""


from ._library import lib as _lib
from ._library import path as library_path
from .arena import Arena
from .builder import Opcode, ProgramBuilder, float_bits
from .deferred import Deferred
from .enums import Compute, CpuClass, GpuClass, GpuVendor, Modality, Mood, Outputs, Residency, Scalar
from .errors import (  # the library's errors and, as one branch of them, the session's
    Cancelled,
    CompileFailed,
    ConfigMismatch,
    Contended,
    DeviceError,
    Error,
    FormatError,
    InternalError,
    InvalidArgument,
    InvalidBuffer,
    InvalidHandle,
    InvalidProgram,
    IoError,
    LaunchFailed,
    OutOfMemory,
    PeerLost,
    SessionError,
    SessionOutOfMemory,
    SessionStatus,
    Status,
    Timeout,
    TooManyPrograms,
    Unsupported,
    UnsupportedVersion,
    status_name,
)
from .executor import Executor
from .mesh import Mesh, MeshDescription, MeshLaunch
from .model import DeferredReceiver, Description, Model, Receiver
from .results import Chosen, Encoded, Ragged, Stats, bfloat16_to_float32
from .session import Descriptor, DType, Program, Session
from .trainer import StepResult, Trainer, TrainerDescription, TrainerReceiver, TrainerStats
from .data import Batch, DataError, Dataset, DatasetDescription, Evaluation, FitResult, Item, Loader, LoaderStats, evaluate, recall
from .index import AnnDescription, BuildResult, Hits, Index, IndexDescription
from .prepared import Prepared
from .system import GpuDevice, cpu_class_detect, cpu_class_name, cpu_class_supported, gpu_devices, version

__version__ = "%d.%d.%d" % version()

__all__ = [
    "Arena",
    "Batch",
    "BuildResult",
    "DataError",
    "Dataset",
    "DatasetDescription",
    "Evaluation",
    "FitResult",
    "Hits",
    "Index",
    "IndexDescription",
    "Item",
    "Loader",
    "LoaderStats",
    "Prepared",
    "evaluate",
    "recall",
    "Cancelled",
    "Chosen",
    "CompileFailed",
    "Compute",
    "ConfigMismatch",
    "Contended",
    "CpuClass",
    "DType",
    "Deferred",
    "DeferredReceiver",
    "Description",
    "Descriptor",
    "DeviceError",
    "Encoded",
    "Error",
    "Executor",
    "FormatError",
    "GpuClass",
    "GpuDevice",
    "GpuVendor",
    "InternalError",
    "InvalidArgument",
    "InvalidBuffer",
    "InvalidHandle",
    "InvalidProgram",
    "IoError",
    "LaunchFailed",
    "Mesh",
    "MeshDescription",
    "MeshLaunch",
    "Modality",
    "Model",
    "Mood",
    "Opcode",
    "OutOfMemory",
    "Outputs",
    "PeerLost",
    "Program",
    "ProgramBuilder",
    "Ragged",
    "Receiver",
    "Residency",
    "Scalar",
    "Session",
    "SessionError",
    "SessionOutOfMemory",
    "SessionStatus",
    "Stats",
    "Status",
    "StepResult",
    "Timeout",
    "TooManyPrograms",
    "Trainer",
    "TrainerDescription",
    "TrainerReceiver",
    "TrainerStats",
    "Unsupported",
    "UnsupportedVersion",
    "bfloat16_to_float32",
    "cpu_class_detect",
    "cpu_class_name",
    "cpu_class_supported",
    "float_bits",
    "gpu_devices",
    "library_path",
    "status_name",
    "version",
]

/*
 * The weights-only pickle machine behind the PyTorch reader (torch_file.h), shared by its three
 * files: torch_pickle.c runs the opcodes, torch_globals.c holds the allow-list and what REDUCE,
 * NEWOBJ, BUILD and persistent ids may build, torch_flatten.c turns the result into names.
 * Private to src/io/.
 *
 * The machine builds data, never code: a value is one of the kinds below, and a "global" is an
 * index into a fixed table of names (torch_globals.c), so naming anything else fails before it
 * could mean anything. Every table is bounded (the limits below), no step recurses, and the
 * whole run is one pass over the pickle, so a hostile pickle costs at most its length in time
 * and a fixed multiple of it, under the limits, in memory.
 */
#ifndef UFORM_IO_TORCH_PICKLE_H
#define UFORM_IO_TORCH_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/outcome.h"
#include "io/safetensors.h"
#include "io/safetensors_text.h"
#include "uform/uform.h"

/* Objects built (16 bytes each): a state dict of 100,000 tensors builds about 1.5 million. */
#define UFORM__TORCH_MAX_VALUES (1u << 23)
/* Items in lists, tuples and dicts together (8 bytes each). */
#define UFORM__TORCH_MAX_NODES (1u << 24)
/* The stack's depth: torch's pickles batch 1,000 items between marks. */
#define UFORM__TORCH_MAX_STACK (1u << 22)
/* MARKs open at once; real pickles nest a handful. */
#define UFORM__TORCH_MAX_MARKS 1024u
/* Dicts on one path when flattening names, the top-level one included. */
#define UFORM__TORCH_MAX_DEPTH 64u
/* Bytes of all flattened names together. */
#define UFORM__TORCH_MAX_NAME_BYTES ((size_t)256 << 20)
/* The largest data.pkl read; real ones are kilobytes to a few megabytes. */
#define UFORM__TORCH_MAX_PICKLE ((size_t)1 << 30)

/* ShortStorage's int16, which safetensors.h has no dtype for: a tensor of it is UFORM_UNSUPPORTED. */
#define UFORM__TORCH_I16 ((uform__safetensors_dtype_t)UFORM__SAFETENSORS_DTYPE_COUNT)

typedef enum uform__torch_kind_t {
    UFORM__TORCH_NONE = 0,
    UFORM__TORCH_BOOL,
    UFORM__TORCH_INT,     /* fits in int64 */
    UFORM__TORCH_BIGINT,  /* a LONG1 wider than 8 bytes: kept only as a leaf */
    UFORM__TORCH_FLOAT,
    UFORM__TORCH_STRING,  /* text or bytes: `flag` 1 for bytes; the bytes stay in the pickle */
    UFORM__TORCH_TUPLE,
    UFORM__TORCH_LIST,
    UFORM__TORCH_DICT,    /* `flag` 1 for an OrderedDict */
    UFORM__TORCH_GLOBAL,  /* `count` indexes the allow-list */
    UFORM__TORCH_STORAGE, /* `count` indexes machine->storages */
    UFORM__TORCH_TENSOR,  /* `count` indexes machine->views */
    UFORM__TORCH_OPAQUE   /* a torch.device, a dtype, a set: data nobody reads */
} uform__torch_kind_t;

/* One value. Containers keep their items as a chain of nodes (a dict: key, value, key, ...). */
typedef struct uform__torch_value_t {
    uint8_t kind;
    uint8_t flag;
    uint16_t visiting;  /* torch_flatten.c: 1 while the dict is on the path being walked */
    uint32_t count;     /* containers: nodes; strings: bytes; globals, storages, tensors: index */
    union {
        int64_t integer;  /* INT, BOOL */
        double real;      /* FLOAT */
        uint64_t offset;  /* STRING: where its bytes start in the pickle */
        struct {
            uint32_t head, tail; /* containers: first and last node, UINT32_MAX when empty */
        } chain;
    } as;
} uform__torch_value_t;

typedef struct uform__torch_node_t {
    uint32_t value, next; /* next is UINT32_MAX at the end of a chain */
} uform__torch_node_t;

/* A persistent id ('storage', <class>, key, location, numel): the bytes of entry `archive/data/<key>`.
 * The legacy format's ids add a sixth item, None or an old storage view (view key, first, numel),
 * and then `numel` counts the root storage's elements. */
typedef struct uform__torch_storage_t {
    uint64_t key_offset;  /* the key's bytes in the pickle (no NUL among them) */
    uint32_t key_length;
    uform__safetensors_dtype_t dtype; /* or UFORM__TORCH_I16 */
    uint64_t first;       /* the storage's first element within the key's bytes (0 but in old views) */
    uint64_t numel;       /* elements the storage holds from `first` on */
    size_t at;            /* the BINPERSID's byte offset in the pickle */
} uform__torch_storage_t;

/* A tensor built by _rebuild_tensor(_v2): a strided view of a storage, checked to lie inside it. */
typedef struct uform__torch_view_t {
    uint32_t storage;
    uint32_t rank;
    uint64_t offset;      /* in elements */
    uint64_t shape[UFORM__SAFETENSORS_MAX_RANK];
    uint64_t stride[UFORM__SAFETENSORS_MAX_RANK]; /* in elements, never negative */
    uint64_t element_count;
    size_t at;            /* the REDUCE's byte offset in the pickle */
} uform__torch_view_t;

typedef struct uform__torch_machine_t {
    const uint8_t *bytes;
    size_t size;
    const char *source;   /* what the pickle is, for messages: "entry 'archive/data.pkl'" */
    int legacy;           /* persistent ids have the legacy format's six items */
    size_t opcode_at;     /* the byte offset of the opcode being run, for messages */
    size_t end;           /* the byte after STOP, once the run succeeded */
    size_t origin;        /* where the pickle starts in the file, for messages */
    uform_outcome_t *outcome;
    uform__torch_value_t *values;
    uint32_t value_count, value_capacity;
    uform__torch_node_t *nodes;
    uint32_t node_count, node_capacity;
    uint32_t *stack;
    uint32_t stack_count, stack_capacity;
    uint32_t *marks;      /* the stack's length at each open MARK */
    uint32_t mark_count, mark_capacity;
    uint32_t *memo;       /* value index per memo slot, UINT32_MAX when unset */
    uint32_t memo_capacity, memo_count;
    uform__torch_storage_t *storages;
    uint32_t storage_count, storage_capacity;
    uform__torch_view_t *views;
    uint32_t view_count, view_capacity;
    uint32_t root;        /* what STOP popped */
} uform__torch_machine_t;

/* ---- torch_pickle.c ---- */

/*
 * Runs the pickle at `bytes` (at most `size` bytes) on a zeroed `machine` up to its STOP; set
 * `machine->legacy` first for the legacy format, and `machine->origin` to the pickle's offset in
 * the file. `source` says what the pickle is in messages and must outlive the machine. Statuses: UFORM_OK (`machine->root` is the result); UFORM_FORMAT (a
 * malformed pickle, an opcode or global off the list, a limit passed: the message has the
 * pickle byte offset); UFORM_UNSUPPORTED (a newer protocol, a valid torch object this reader does
 * not build); UFORM_OUT_OF_MEMORY. Free the machine with uform__torch_pickle_free either way.
 */
uform_status_t uform__torch_pickle_run(uform__torch_machine_t *machine, const uint8_t *bytes, size_t size,
                                       const char *source, uform_outcome_t *outcome);
void uform__torch_pickle_free(uform__torch_machine_t *machine);

/* Fails with "<source>, pickle byte N (file byte M): <message>". */
uform_status_t uform__torch_pickle_fail(const uform__torch_machine_t *machine, uform_status_t status, const char *format,
                                        ...) UFORM__PRINTF(3, 4);

/* Grows `*array` of `element_size` items to hold `needed` (doubling); 0 when memory runs out. */
int uform__torch_grow(void **array, uint32_t *capacity, size_t element_size, uint32_t needed);

/* A new value of `kind` (containers empty); its index in `*index`. */
uform_status_t uform__torch_value_new(uform__torch_machine_t *machine, uform__torch_kind_t kind, uint32_t *index);

/* Appends `value` to the chain of container `container`. */
uform_status_t uform__torch_chain_append(uform__torch_machine_t *machine, uint32_t container, uint32_t value);

/* Copies up to `capacity` item indexes of container `container` into `items`; answers how many it holds. */
uint32_t uform__torch_items(const uform__torch_machine_t *machine, uint32_t container, uint32_t *items, uint32_t capacity);

/* "a tuple", "a string", ... for messages. */
const char *uform__torch_kind_name(uform__torch_kind_t kind);

/* Writes `length` bytes between single quotes for a message (control bytes, quotes and backslashes as
 * \xNN, cut with "..." to fit the buffer) into `buffer`; answers `buffer`. */
const char *uform__torch_quote_bytes(const uint8_t *bytes, size_t length, char buffer[UFORM__SAFETENSORS_QUOTE_CAPACITY]);

/* ---- torch_globals.c ---- */

/* Finds `module`.`name` on the allow-list and pushes nothing: answers its index, or fails with
 * UFORM_FORMAT naming the global. */
uform_status_t uform__torch_global_find(const uform__torch_machine_t *machine, const uint8_t *module, size_t module_length,
                                        const uint8_t *name, size_t name_length, uint32_t *index);

/* "torch._utils._rebuild_tensor_v2" for an allow-list index. */
const char *uform__torch_global_name(uint32_t index);

/* REDUCE: calls allow-listed `callable` on tuple `arguments`; the result's index in `*result`. */
uform_status_t uform__torch_reduce(uform__torch_machine_t *machine, uint32_t callable, uint32_t arguments, uint32_t *result);

/* NEWOBJ: `cls.__new__(cls, *arguments)` for the allow-listed classes that allow it. */
uform_status_t uform__torch_newobj(uform__torch_machine_t *machine, uint32_t cls, uint32_t arguments, uint32_t *result);

/* BUILD: sets `state` on `target` (kept on the stack): only dicts' attributes, which are dropped. */
uform_status_t uform__torch_build(uform__torch_machine_t *machine, uint32_t target, uint32_t state);

/* BINPERSID: resolves persistent id `pid` to a new storage value. */
uform_status_t uform__torch_persistent(uform__torch_machine_t *machine, uint32_t pid, uint32_t *result);

/* ---- torch_legacy.c ---- */

/*
 * Reads a file of the legacy format (torch.save before PyTorch 1.6, or with
 * _use_new_zipfile_serialization=False), whose first bytes the caller recognised: the pickles of
 * the magic number, the protocol version (1001) and the system's description, then the object's
 * pickle into the zeroed `machine`, the pickle of the storage keys, and each storage's bytes in
 * that order, after its element count. `*storage_data` (malloc'd, freed by the caller, also on
 * failure) gets each storage's first byte in the file. Statuses as uform__torch_pickle_run, and
 * UFORM_FORMAT for storages that are missing, repeated or past the file's end.
 */
uform_status_t uform__torch_legacy_read(const uint8_t *bytes, size_t size, uform__torch_machine_t *machine,
                                        uint64_t **storage_data, uform_outcome_t *outcome);

/* Bytes per element of a storage's dtype (UFORM__TORCH_I16 included). */
size_t uform__torch_element_size(uform__safetensors_dtype_t dtype);

/* ---- torch_flatten.c ---- */

/* One name of the flattened result. */
typedef struct uform__torch_entry_t {
    size_t name;   /* offset of the NUL-terminated name in the names block */
    uint32_t view; /* index into machine->views */
} uform__torch_entry_t;

/*
 * Walks the result (which must be a dict) and lists every tensor reachable through nested
 * dicts, named by the keys on the way joined with '.'. Keys are strings (valid UTF-8, no NUL) or
 * integers (written in decimal); an entry with another key, and every value that is neither a
 * tensor nor a dict (lists, tuples, numbers, strings, None ...), is skipped. `*entries` and
 * `*names` are malloc'd (free both, also on failure). Statuses: UFORM_OK; UFORM_UNSUPPORTED (the
 * result is not a dict); UFORM_FORMAT (a dict that contains itself, too deep, a bad key, past a
 * limit); UFORM_OUT_OF_MEMORY.
 */
uform_status_t uform__torch_flatten(uform__torch_machine_t *machine, uform__torch_entry_t **entries, size_t *count,
                                    char **names);

#endif

/*
 * The allow-list of the weights-only pickle machine (torch_pickle.h) and what each entry may
 * build. The idea is torch.load(weights_only=True)'s (torch/_weights_only_unpickler.py); the list
 * is narrower, each entry's effect is written out here rather than called, and none of them
 * runs anything: an entry only makes data from data.
 *
 *   collections.OrderedDict              a dict (REDUCE or NEWOBJ; REDUCE may pass (key, value) pairs)
 *   torch._utils._rebuild_tensor_v2      a tensor: (storage, offset, size, stride, requires_grad,
 *                                        backward_hooks[, metadata]); the last three are ignored
 *   torch._utils._rebuild_tensor         the same without the last three (older files)
 *   torch._utils._rebuild_parameter      (tensor, requires_grad, hooks): the tensor itself
 *   torch._utils._rebuild_parameter_with_state  the same with a state, ignored
 *   torch.Size                           (tuple of ints,): that tuple
 *   torch.device                         ('cpu' or 'cuda'[, index]): an opaque leaf
 *   torch.<X>Storage                     only inside a persistent id, naming the element type
 *   torch.<dtype>                        an opaque leaf (a dtype kept in a checkpoint's metadata)
 *
 * Anything else by name is UFORM_FORMAT naming the global; a global called in a way its entry
 * does not allow (a storage type called, a rebuild with a string for a shape) is UFORM_FORMAT too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "io/torch_pickle.h"

typedef enum role_t {
    ROLE_ORDERED_DICT,
    ROLE_REBUILD_TENSOR_V2,
    ROLE_REBUILD_TENSOR,
    ROLE_REBUILD_PARAMETER,
    ROLE_REBUILD_PARAMETER_WITH_STATE,
    ROLE_SIZE,
    ROLE_DEVICE,
    ROLE_STORAGE,
    ROLE_DTYPE
} role_t;

typedef struct global_t {
    const char *module, *name, *full;
    role_t role;
    uform__safetensors_dtype_t dtype; /* ROLE_STORAGE */
} global_t;

static const global_t globals[] = {
    {"collections", "OrderedDict", "collections.OrderedDict", ROLE_ORDERED_DICT, 0},
    {"torch._utils", "_rebuild_tensor_v2", "torch._utils._rebuild_tensor_v2", ROLE_REBUILD_TENSOR_V2, 0},
    {"torch._utils", "_rebuild_tensor", "torch._utils._rebuild_tensor", ROLE_REBUILD_TENSOR, 0},
    {"torch._utils", "_rebuild_parameter", "torch._utils._rebuild_parameter", ROLE_REBUILD_PARAMETER, 0},
    {"torch._utils", "_rebuild_parameter_with_state", "torch._utils._rebuild_parameter_with_state",
     ROLE_REBUILD_PARAMETER_WITH_STATE, 0},
    {"torch", "Size", "torch.Size", ROLE_SIZE, 0},
    {"torch", "device", "torch.device", ROLE_DEVICE, 0},
    {"torch", "FloatStorage", "torch.FloatStorage", ROLE_STORAGE, UFORM__SAFETENSORS_F32},
    {"torch", "HalfStorage", "torch.HalfStorage", ROLE_STORAGE, UFORM__SAFETENSORS_F16},
    {"torch", "BFloat16Storage", "torch.BFloat16Storage", ROLE_STORAGE, UFORM__SAFETENSORS_BF16},
    {"torch", "DoubleStorage", "torch.DoubleStorage", ROLE_STORAGE, UFORM__SAFETENSORS_F64},
    {"torch", "LongStorage", "torch.LongStorage", ROLE_STORAGE, UFORM__SAFETENSORS_I64},
    {"torch", "IntStorage", "torch.IntStorage", ROLE_STORAGE, UFORM__SAFETENSORS_I32},
    {"torch", "ShortStorage", "torch.ShortStorage", ROLE_STORAGE, UFORM__TORCH_I16},
    {"torch", "CharStorage", "torch.CharStorage", ROLE_STORAGE, UFORM__SAFETENSORS_I8},
    {"torch", "ByteStorage", "torch.ByteStorage", ROLE_STORAGE, UFORM__SAFETENSORS_U8},
    {"torch", "BoolStorage", "torch.BoolStorage", ROLE_STORAGE, UFORM__SAFETENSORS_BOOL},
    {"torch", "float16", "torch.float16", ROLE_DTYPE, 0},
    {"torch", "bfloat16", "torch.bfloat16", ROLE_DTYPE, 0},
    {"torch", "float32", "torch.float32", ROLE_DTYPE, 0},
    {"torch", "float64", "torch.float64", ROLE_DTYPE, 0},
    {"torch", "int8", "torch.int8", ROLE_DTYPE, 0},
    {"torch", "uint8", "torch.uint8", ROLE_DTYPE, 0},
    {"torch", "int16", "torch.int16", ROLE_DTYPE, 0},
    {"torch", "int32", "torch.int32", ROLE_DTYPE, 0},
    {"torch", "int64", "torch.int64", ROLE_DTYPE, 0},
    {"torch", "bool", "torch.bool", ROLE_DTYPE, 0},
};
#define GLOBAL_COUNT (sizeof globals / sizeof globals[0])

/* The most items any allow-listed call reads from its argument tuple (rebuild_tensor_v2's 7). */
#define MAX_ARGUMENTS 7

const char *uform__torch_global_name(uint32_t index) { return index < GLOBAL_COUNT ? globals[index].full : "?"; }

static int same(const uint8_t *bytes, size_t length, const char *text) {
    return strlen(text) == length && memcmp(bytes, text, length) == 0;
}

uform_status_t uform__torch_global_find(const uform__torch_machine_t *machine, const uint8_t *module, size_t module_length,
                                        const uint8_t *name, size_t name_length, uint32_t *index) {
    for (uint32_t entry = 0; entry < GLOBAL_COUNT; ++entry) {
        if (same(module, module_length, globals[entry].module) && same(name, name_length, globals[entry].name)) {
            *index = entry;
            return UFORM_OK;
        }
    }
    /* "module.name", cut to what a message can hold, then quoted with its control bytes escaped. */
    uint8_t spelled[160];
    size_t used = module_length < 100 ? module_length : 100;
    memcpy(spelled, module, used);
    spelled[used++] = '.';
    size_t rest = name_length < sizeof spelled - used ? name_length : sizeof spelled - used;
    memcpy(spelled + used, name, rest);
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                    "global %s is not on the allow-list (tensors, storages, OrderedDict, torch.Size); "
                                    "nothing it names is built",
                                    uform__torch_quote_bytes(spelled, used + rest, quoted));
}

/* The items of `arguments`, which must be a tuple of `minimum` to `maximum` items. */
static uform_status_t arguments_of(const uform__torch_machine_t *machine, uint32_t arguments, const char *callee,
                                   uint32_t minimum, uint32_t maximum, uint32_t items[MAX_ARGUMENTS], uint32_t *count) {
    const uform__torch_value_t *value = &machine->values[arguments];
    if (value->kind != UFORM__TORCH_TUPLE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s is called with %s, not an argument tuple", callee,
                                        uform__torch_kind_name(value->kind));
    if (value->count < minimum || value->count > maximum)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s takes %u to %u arguments, the pickle passes %u", callee,
                                        minimum, maximum, value->count);
    *count = uform__torch_items(machine, arguments, items, MAX_ARGUMENTS);
    return UFORM_OK;
}

/* A non-negative int, or a failure naming `what`. */
static uform_status_t natural(const uform__torch_machine_t *machine, uint32_t index, const char *callee, const char *what,
                              uint64_t *out) {
    const uform__torch_value_t *value = &machine->values[index];
    if (value->kind != UFORM__TORCH_INT)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's %s is %s, not an int", callee, what,
                                        uform__torch_kind_name(value->kind));
    if (value->as.integer < 0)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's %s is negative (%" PRId64 ")", callee, what,
                                        value->as.integer);
    *out = (uint64_t)value->as.integer;
    return UFORM_OK;
}

/* A tuple of up to UFORM__SAFETENSORS_MAX_RANK non-negative ints (a size or a stride). */
static uform_status_t dimensions(const uform__torch_machine_t *machine, uint32_t index, const char *callee, const char *what,
                                 uint64_t out[UFORM__SAFETENSORS_MAX_RANK], uint32_t *rank) {
    const uform__torch_value_t *value = &machine->values[index];
    if (value->kind != UFORM__TORCH_TUPLE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's %s is %s, not a tuple of ints", callee, what,
                                        uform__torch_kind_name(value->kind));
    if (value->count > UFORM__SAFETENSORS_MAX_RANK)
        return uform__torch_pickle_fail(machine, UFORM_UNSUPPORTED, "%s's %s has %u dimensions, at most %d are supported",
                                        callee, what, value->count, UFORM__SAFETENSORS_MAX_RANK);
    uint32_t items[UFORM__SAFETENSORS_MAX_RANK];
    *rank = uform__torch_items(machine, index, items, UFORM__SAFETENSORS_MAX_RANK);
    for (uint32_t axis = 0; axis < *rank; ++axis) {
        char label[48];
        snprintf(label, sizeof label, "%s[%u]", what, axis);
        uform_status_t status = natural(machine, items[axis], callee, label, &out[axis]);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* _rebuild_tensor(_v2): a view of a storage, which every element it reaches must lie inside. */
static uform_status_t rebuild_tensor(uform__torch_machine_t *machine, const uint32_t *items, const char *callee,
                                     uint32_t *result) {
    const uform__torch_value_t *storage_value = &machine->values[items[0]];
    if (storage_value->kind != UFORM__TORCH_STORAGE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's storage is %s, not a storage from a persistent id",
                                        callee, uform__torch_kind_name(storage_value->kind));
    uform__torch_view_t view;
    memset(&view, 0, sizeof view);
    view.storage = storage_value->count;
    view.at = machine->opcode_at;
    uint32_t stride_rank = 0;
    uform_status_t status = natural(machine, items[1], callee, "storage offset", &view.offset);
    if (status == UFORM_OK) status = dimensions(machine, items[2], callee, "size", view.shape, &view.rank);
    if (status == UFORM_OK) status = dimensions(machine, items[3], callee, "stride", view.stride, &stride_rank);
    if (status != UFORM_OK) return status;
    if (stride_rank != view.rank)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's size has %u dimensions but its stride %u", callee,
                                        view.rank, stride_rank);
    view.element_count = 1;
    uint64_t last = view.offset; /* the highest element index the view reaches */
    int overflow = 0, empty = 0;
    for (uint32_t axis = 0; axis < view.rank; ++axis) {
        empty |= view.shape[axis] == 0;
        overflow |= __builtin_mul_overflow(view.element_count, view.shape[axis], &view.element_count);
        uint64_t reach = 0;
        if (view.shape[axis]) overflow |= __builtin_mul_overflow(view.shape[axis] - 1, view.stride[axis], &reach);
        overflow |= __builtin_add_overflow(last, reach, &last);
    }
    if (empty) view.element_count = 0; /* an empty tensor reads nothing, whatever its other sizes */
    else if (overflow)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s's size and stride reach past 2^64 elements", callee);
    const uform__torch_storage_t *storage = &machine->storages[view.storage];
    if (!empty && last >= storage->numel)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "%s's view reaches element %" PRIu64 " of a storage of %" PRIu64 " elements",
                                        callee, last, storage->numel);
    if (!uform__torch_grow((void **)&machine->views, &machine->view_capacity, sizeof *machine->views,
                           machine->view_count + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate %u tensor records",
                                        machine->view_count + 1);
    status = uform__torch_value_new(machine, UFORM__TORCH_TENSOR, result);
    if (status != UFORM_OK) return status;
    machine->values[*result].count = machine->view_count;
    machine->views[machine->view_count++] = view;
    return UFORM_OK;
}

/* OrderedDict(): empty, or from one list or tuple of (key, value) pairs. */
static uform_status_t ordered_dict(uform__torch_machine_t *machine, const uint32_t *items, uint32_t count,
                                   uint32_t *result) {
    uform_status_t status = uform__torch_value_new(machine, UFORM__TORCH_DICT, result);
    if (status != UFORM_OK) return status;
    machine->values[*result].flag = 1;
    if (!count) return UFORM_OK;
    const uform__torch_value_t *pairs = &machine->values[items[0]];
    if (pairs->kind != UFORM__TORCH_LIST && pairs->kind != UFORM__TORCH_TUPLE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "OrderedDict is called with %s, not a list of pairs",
                                        uform__torch_kind_name(pairs->kind));
    for (uint32_t node = pairs->as.chain.head; node != UINT32_MAX; node = machine->nodes[node].next) {
        uint32_t pair = machine->nodes[node].value, both[2];
        if (machine->values[pair].kind != UFORM__TORCH_TUPLE || uform__torch_items(machine, pair, both, 2) != 2)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "OrderedDict is called with an item that is not a pair");
        status = uform__torch_chain_append(machine, *result, both[0]);
        if (status == UFORM_OK) status = uform__torch_chain_append(machine, *result, both[1]);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* torch.Size((ints,)): the tuple itself, once its items are checked. */
static uform_status_t size_of(uform__torch_machine_t *machine, const uint32_t *items, uint32_t *result) {
    const uform__torch_value_t *tuple = &machine->values[items[0]];
    if (tuple->kind != UFORM__TORCH_TUPLE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "torch.Size is called with %s, not a tuple of ints",
                                        uform__torch_kind_name(tuple->kind));
    for (uint32_t node = tuple->as.chain.head; node != UINT32_MAX; node = machine->nodes[node].next) {
        if (machine->values[machine->nodes[node].value].kind != UFORM__TORCH_INT)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "torch.Size is called with a tuple holding %s",
                                            uform__torch_kind_name(machine->values[machine->nodes[node].value].kind));
    }
    *result = items[0];
    return UFORM_OK;
}

uform_status_t uform__torch_reduce(uform__torch_machine_t *machine, uint32_t callable, uint32_t arguments, uint32_t *result) {
    const uform__torch_value_t *function = &machine->values[callable];
    if (function->kind != UFORM__TORCH_GLOBAL)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "REDUCE calls %s, not an allow-listed global",
                                        uform__torch_kind_name(function->kind));
    const global_t *global = &globals[function->count];
    uint32_t items[MAX_ARGUMENTS], count = 0;
    uform_status_t status;
    switch (global->role) {
    case ROLE_ORDERED_DICT:
        status = arguments_of(machine, arguments, global->full, 0, 1, items, &count);
        return status == UFORM_OK ? ordered_dict(machine, items, count, result) : status;
    case ROLE_REBUILD_TENSOR_V2:
    case ROLE_REBUILD_TENSOR: {
        uint32_t minimum = global->role == ROLE_REBUILD_TENSOR ? 4 : 6, maximum = global->role == ROLE_REBUILD_TENSOR ? 4 : 7;
        status = arguments_of(machine, arguments, global->full, minimum, maximum, items, &count);
        return status == UFORM_OK ? rebuild_tensor(machine, items, global->full, result) : status;
    }
    case ROLE_REBUILD_PARAMETER:
    case ROLE_REBUILD_PARAMETER_WITH_STATE: {
        uint32_t wanted = global->role == ROLE_REBUILD_PARAMETER ? 3 : 4;
        status = arguments_of(machine, arguments, global->full, wanted, wanted, items, &count);
        if (status != UFORM_OK) return status;
        if (machine->values[items[0]].kind != UFORM__TORCH_TENSOR)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s wraps %s, not a tensor", global->full,
                                            uform__torch_kind_name(machine->values[items[0]].kind));
        *result = items[0]; /* a parameter is its tensor: requires_grad, hooks and state do not matter here */
        return UFORM_OK;
    }
    case ROLE_SIZE:
        status = arguments_of(machine, arguments, global->full, 1, 1, items, &count);
        return status == UFORM_OK ? size_of(machine, items, result) : status;
    case ROLE_DEVICE:
        status = arguments_of(machine, arguments, global->full, 1, 2, items, &count);
        if (status != UFORM_OK) return status;
        if (machine->values[items[0]].kind != UFORM__TORCH_STRING ||
            (count == 2 && machine->values[items[1]].kind != UFORM__TORCH_INT &&
             machine->values[items[1]].kind != UFORM__TORCH_NONE))
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "torch.device takes a string and an optional int");
        return uform__torch_value_new(machine, UFORM__TORCH_OPAQUE, result);
    default:
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "REDUCE calls %s, which may only be named, not called",
                                        global->full);
    }
}

uform_status_t uform__torch_newobj(uform__torch_machine_t *machine, uint32_t cls, uint32_t arguments, uint32_t *result) {
    const uform__torch_value_t *type = &machine->values[cls];
    if (type->kind != UFORM__TORCH_GLOBAL)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "NEWOBJ makes an instance of %s, not an allow-listed class",
                                        uform__torch_kind_name(type->kind));
    const global_t *global = &globals[type->count];
    if (machine->values[arguments].kind != UFORM__TORCH_TUPLE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "NEWOBJ's arguments are %s, not a tuple",
                                        uform__torch_kind_name(machine->values[arguments].kind));
    if (global->role == ROLE_ORDERED_DICT) { /* OrderedDict.__new__ ignores its arguments */
        uform_status_t status = uform__torch_value_new(machine, UFORM__TORCH_DICT, result);
        if (status == UFORM_OK) machine->values[*result].flag = 1;
        return status;
    }
    if (global->role == ROLE_SIZE) return uform__torch_reduce(machine, cls, arguments, result);
    return uform__torch_pickle_fail(machine, UFORM_FORMAT, "NEWOBJ makes an instance of %s, which is not a class it may make",
                                    global->full);
}

uform_status_t uform__torch_build(uform__torch_machine_t *machine, uint32_t target, uint32_t state) {
    const uform__torch_value_t *object = &machine->values[target], *with = &machine->values[state];
    /* An OrderedDict's attributes (the state dict's `_metadata`): kept out of the result. */
    if (object->kind == UFORM__TORCH_DICT) return UFORM_OK;
    if (object->kind == UFORM__TORCH_TENSOR) {
        /* weights_only would call set_() on the tensor with this state, replacing its storage:
         * only a state that changes nothing is followed. */
        int empty = with->kind == UFORM__TORCH_NONE ||
                    ((with->kind == UFORM__TORCH_DICT || with->kind == UFORM__TORCH_TUPLE) && with->count == 0);
        if (empty) return UFORM_OK;
        return uform__torch_pickle_fail(machine, UFORM_UNSUPPORTED,
                                        "BUILD sets %s as a tensor's state, which this reader does not follow",
                                        uform__torch_kind_name(with->kind));
    }
    return uform__torch_pickle_fail(machine, UFORM_FORMAT, "BUILD sets state on %s; only dicts and tensors take one",
                                    uform__torch_kind_name(object->kind));
}

/* A string (or bytes) value equal to `text`. */
static int string_is(const uform__torch_machine_t *machine, const uform__torch_value_t *value, const char *text) {
    return value->kind == UFORM__TORCH_STRING && same(machine->bytes + value->as.offset, value->count, text);
}

/* The sixth item of a legacy persistent id: None, or an old storage view (view key, first, numel)
 * of the root storage's `root` elements. */
static uform_status_t legacy_view(const uform__torch_machine_t *machine, uint32_t index, uint64_t root,
                                  uform__torch_storage_t *storage) {
    const uform__torch_value_t *view = &machine->values[index];
    storage->numel = root;
    if (view->kind == UFORM__TORCH_NONE) return UFORM_OK;
    uint32_t items[3];
    if (view->kind != UFORM__TORCH_TUPLE || uform__torch_items(machine, index, items, 3) != 3 ||
        machine->values[items[0]].kind != UFORM__TORCH_STRING)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "the persistent id's view is %s, not None or (view key, offset, size)",
                                        uform__torch_kind_name(view->kind));
    uform_status_t status = natural(machine, items[1], "the persistent id's view", "offset", &storage->first);
    if (status == UFORM_OK) status = natural(machine, items[2], "the persistent id's view", "size", &storage->numel);
    if (status != UFORM_OK) return status;
    if (storage->first > root || storage->numel > root - storage->first)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "the persistent id's view of %" PRIu64 " elements from %" PRIu64
                                        " lies outside its storage of %" PRIu64,
                                        storage->numel, storage->first, root);
    return UFORM_OK;
}

uform_status_t uform__torch_persistent(uform__torch_machine_t *machine, uint32_t pid, uint32_t *result) {
    const char *shape = machine->legacy ? "('storage', <storage type>, key, location, numel, view)"
                                        : "('storage', <storage type>, key, location, numel)";
    uint32_t wanted = machine->legacy ? 6 : 5;
    const uform__torch_value_t *tuple = &machine->values[pid];
    if (tuple->kind != UFORM__TORCH_TUPLE || tuple->count != wanted)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the persistent id is %s of %u items, not %s",
                                        uform__torch_kind_name(tuple->kind),
                                        tuple->kind == UFORM__TORCH_TUPLE ? tuple->count : 1, shape);
    uint32_t items[6];
    uform__torch_items(machine, pid, items, 6);
    const uform__torch_value_t *kind = &machine->values[items[0]], *type = &machine->values[items[1]];
    const uform__torch_value_t *key = &machine->values[items[2]], *location = &machine->values[items[3]];
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    if (!string_is(machine, kind, "storage"))
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the persistent id's kind is %s, not 'storage'",
                                        kind->kind == UFORM__TORCH_STRING
                                            ? uform__torch_quote_bytes(machine->bytes + kind->as.offset, kind->count, quoted)
                                            : uform__torch_kind_name(kind->kind));
    if (type->kind != UFORM__TORCH_GLOBAL || globals[type->count].role != ROLE_STORAGE)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the persistent id's storage type is %s, not torch.<X>Storage",
                                        type->kind == UFORM__TORCH_GLOBAL ? globals[type->count].full
                                                                          : uform__torch_kind_name(type->kind));
    if (key->kind != UFORM__TORCH_STRING || key->count == 0 || memchr(machine->bytes + key->as.offset, 0, key->count))
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the persistent id's key is %s, not a non-empty string without NUL",
                                        key->kind == UFORM__TORCH_STRING ? "a string that is empty or holds NUL"
                                                                         : uform__torch_kind_name(key->kind));
    if (location->kind != UFORM__TORCH_STRING)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the persistent id's location is %s, not a string",
                                        uform__torch_kind_name(location->kind));
    uform__torch_storage_t storage = {key->as.offset, key->count, globals[type->count].dtype, 0, 0, machine->opcode_at};
    uint64_t numel = 0;
    uform_status_t status = natural(machine, items[4], "the persistent id", "element count", &numel);
    if (status != UFORM_OK) return status;
    storage.numel = numel;
    if (machine->legacy && (status = legacy_view(machine, items[5], numel, &storage)) != UFORM_OK) return status;
    if (!uform__torch_grow((void **)&machine->storages, &machine->storage_capacity, sizeof *machine->storages,
                           machine->storage_count + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate %u storage records",
                                        machine->storage_count + 1);
    status = uform__torch_value_new(machine, UFORM__TORCH_STORAGE, result);
    if (status != UFORM_OK) return status;
    machine->values[*result].count = machine->storage_count;
    machine->storages[machine->storage_count++] = storage;
    return UFORM_OK;
}

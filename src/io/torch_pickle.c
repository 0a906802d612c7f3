/*
 * The pickle machine's opcodes (torch_pickle.h). It follows the semantics of CPython's
 * Lib/pickle.py and Modules/_pickle.c for the opcodes torch.save's pickles use (protocol 2 by
 * default, 4 when asked), with the restrictions of torch.load(weights_only=True)
 * (torch/_weights_only_unpickler.py): no opcode that imports by name other than GLOBAL and
 * STACK_GLOBAL, which only index the allow-list; REDUCE, NEWOBJ, BUILD and BINPERSID only on
 * what torch_globals.c allows. Everything else is refused, the text-mode opcodes of protocol 0
 * and the out-of-band buffers of protocol 5 included.
 *
 * Like _pickle.c, popping never reaches below the innermost open MARK (its "fence").
 */
#include "io/torch_pickle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

/* Opcodes, named as in CPython's pickle.py. */
enum {
    OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2', OP_BININT = 'J', OP_BININT1 = 'K',
    OP_BININT2 = 'M', OP_NONE = 'N', OP_BINPERSID = 'Q', OP_REDUCE = 'R', OP_BINSTRING = 'T', OP_SHORT_BINSTRING = 'U',
    OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b', OP_GLOBAL = 'c', OP_DICT = 'd', OP_EMPTY_DICT = '}',
    OP_APPENDS = 'e', OP_BINGET = 'h', OP_LONG_BINGET = 'j', OP_LIST = 'l', OP_EMPTY_LIST = ']', OP_BINPUT = 'q',
    OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't', OP_EMPTY_TUPLE = ')', OP_SETITEMS = 'u', OP_BINFLOAT = 'G',
    OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C', OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86,
    OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e, OP_EMPTY_SET = 0x8f, OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94,
    OP_FRAME = 0x95
};

/* The highest protocol whose framing this machine understands. */
#define HIGHEST_PROTOCOL 5

/* A GLOBAL's module or name line may be this long (CPython's own names are far shorter). */
#define MAX_GLOBAL_LINE 1024

typedef struct opcode_name_t {
    uint8_t code;
    const char *name;
} opcode_name_t;

/* Every opcode of protocols 0 to 5, so a refusal can say which one it met. */
static const opcode_name_t opcode_names[] = {
    {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"}, {'I', "INT"},
    {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"},
    {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"}, {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
    {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
    {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
    {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
    {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"},
    {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
};

static const char *opcode_name(uint8_t code) {
    for (size_t index = 0; index < sizeof opcode_names / sizeof opcode_names[0]; ++index)
        if (opcode_names[index].code == code) return opcode_names[index].name;
    return "not an opcode";
}

size_t uform__torch_element_size(uform__safetensors_dtype_t dtype) {
    return dtype == UFORM__TORCH_I16 ? 2 : uform__safetensors_dtype_size(dtype);
}

const char *uform__torch_kind_name(uform__torch_kind_t kind) {
    static const char *const names[] = {"None", "a bool", "an int", "an int wider than 64 bits", "a float",
                                        "a string", "a tuple", "a list", "a dict", "a global", "a storage",
                                        "a tensor", "an opaque torch object"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "an unknown value";
}

const char *uform__torch_quote_bytes(const uint8_t *text, size_t length, char buffer[UFORM__SAFETENSORS_QUOTE_CAPACITY]) {
    size_t out = 0;
    buffer[out++] = '\'';
    for (size_t index = 0; index < length; ++index) {
        if (out + 4 + 5 > UFORM__SAFETENSORS_QUOTE_CAPACITY) { /* room for an escape, "...'" and NUL */
            memcpy(buffer + out, "...", 3);
            out += 3;
            break;
        }
        uint8_t byte = text[index];
        if (byte < 0x20 || byte == 0x7F || byte == '\\' || byte == '\'')
            out += (size_t)snprintf(buffer + out, 5, "\\x%02x", byte);
        else
            buffer[out++] = (char)byte;
    }
    buffer[out++] = '\'';
    buffer[out] = 0;
    return buffer;
}

uform_status_t uform__torch_pickle_fail(const uform__torch_machine_t *machine, uform_status_t status, const char *format,
                                        ...) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    return uform__fail(machine->outcome, status, "uform__torch_open", "%s, pickle byte %zu (file byte %zu): %s",
                       machine->source, machine->opcode_at, machine->origin + machine->opcode_at, message);
}

int uform__torch_grow(void **array, uint32_t *capacity, size_t element_size, uint32_t needed) {
    if (needed <= *capacity) return 1;
    size_t next = *capacity ? (size_t)*capacity * 2 : 64;
    while (next < needed) next *= 2;
    if (next > UINT32_MAX - 1) next = UINT32_MAX - 1;
    void *bigger = realloc(*array, next * element_size);
    if (!bigger) return 0;
    *array = bigger;
    *capacity = (uint32_t)next;
    return 1;
}

uform_status_t uform__torch_value_new(uform__torch_machine_t *machine, uform__torch_kind_t kind, uint32_t *index) {
    if (machine->value_count >= UFORM__TORCH_MAX_VALUES)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the pickle builds more than %u objects",
                                        UFORM__TORCH_MAX_VALUES);
    if (!uform__torch_grow((void **)&machine->values, &machine->value_capacity, sizeof *machine->values, machine->value_count + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate room for %u objects",
                                        machine->value_count + 1);
    uform__torch_value_t *value = &machine->values[machine->value_count];
    memset(value, 0, sizeof *value);
    value->kind = (uint8_t)kind;
    if (kind == UFORM__TORCH_TUPLE || kind == UFORM__TORCH_LIST || kind == UFORM__TORCH_DICT)
        value->as.chain.head = value->as.chain.tail = NIL;
    *index = machine->value_count++;
    return UFORM_OK;
}

uform_status_t uform__torch_chain_append(uform__torch_machine_t *machine, uint32_t container, uint32_t value) {
    if (machine->node_count >= UFORM__TORCH_MAX_NODES)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the pickle's containers hold more than %u items",
                                        UFORM__TORCH_MAX_NODES);
    if (!uform__torch_grow((void **)&machine->nodes, &machine->node_capacity, sizeof *machine->nodes, machine->node_count + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate room for %u container items",
                                        machine->node_count + 1);
    uint32_t node = machine->node_count++;
    machine->nodes[node] = (uform__torch_node_t){value, NIL};
    uform__torch_value_t *owner = &machine->values[container];
    if (owner->as.chain.tail == NIL) owner->as.chain.head = node;
    else machine->nodes[owner->as.chain.tail].next = node;
    owner->as.chain.tail = node;
    owner->count += 1;
    return UFORM_OK;
}

uint32_t uform__torch_items(const uform__torch_machine_t *machine, uint32_t container, uint32_t *items, uint32_t capacity) {
    const uform__torch_value_t *owner = &machine->values[container];
    uint32_t copied = 0;
    for (uint32_t node = owner->as.chain.head; node != NIL && copied < capacity; node = machine->nodes[node].next)
        items[copied++] = machine->nodes[node].value;
    return owner->count;
}

void uform__torch_pickle_free(uform__torch_machine_t *machine) {
    if (!machine) return;
    free(machine->values);
    free(machine->nodes);
    free(machine->stack);
    free(machine->marks);
    free(machine->memo);
    free(machine->storages);
    free(machine->views);
    memset(machine, 0, sizeof *machine);
}

/* ---- the stack ---- */

static uint32_t fence(const uform__torch_machine_t *machine) {
    return machine->mark_count ? machine->marks[machine->mark_count - 1] : 0;
}

static uform_status_t push(uform__torch_machine_t *machine, uint32_t value) {
    if (machine->stack_count >= UFORM__TORCH_MAX_STACK)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the stack grows past %u items", UFORM__TORCH_MAX_STACK);
    if (!uform__torch_grow((void **)&machine->stack, &machine->stack_capacity, sizeof *machine->stack, machine->stack_count + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate a stack of %u items",
                                        machine->stack_count + 1);
    machine->stack[machine->stack_count++] = value;
    return UFORM_OK;
}

static uform_status_t underflow(const uform__torch_machine_t *machine, uint8_t code) {
    return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s needs more items than the stack holds above its last MARK",
                                    opcode_name(code));
}

static uform_status_t pop(uform__torch_machine_t *machine, uint8_t code, uint32_t *value) {
    if (machine->stack_count <= fence(machine)) return underflow(machine, code);
    *value = machine->stack[--machine->stack_count];
    return UFORM_OK;
}

static uform_status_t top(const uform__torch_machine_t *machine, uint8_t code, uint32_t *value) {
    if (machine->stack_count <= fence(machine)) return underflow(machine, code);
    *value = machine->stack[machine->stack_count - 1];
    return UFORM_OK;
}

/* Closes the innermost MARK: the items above it are stack[*start..stack_count). */
static uform_status_t pop_mark(uform__torch_machine_t *machine, uint8_t code, uint32_t *start) {
    if (!machine->mark_count)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s closes a MARK, but none is open", opcode_name(code));
    *start = machine->marks[--machine->mark_count];
    return UFORM_OK;
}

static uform_status_t push_new(uform__torch_machine_t *machine, uform__torch_kind_t kind, uint32_t *index) {
    uform_status_t status = uform__torch_value_new(machine, kind, index);
    return status == UFORM_OK ? push(machine, *index) : status;
}

static uform_status_t push_integer(uform__torch_machine_t *machine, uform__torch_kind_t kind, int64_t integer) {
    uint32_t index;
    uform_status_t status = push_new(machine, kind, &index);
    if (status == UFORM_OK) machine->values[index].as.integer = integer;
    return status;
}

/* A container of `kind` holding stack[start..stack_count), which it replaces on the stack. */
static uform_status_t collect(uform__torch_machine_t *machine, uform__torch_kind_t kind, uint32_t start) {
    uint32_t container;
    uform_status_t status = uform__torch_value_new(machine, kind, &container);
    for (uint32_t at = start; status == UFORM_OK && at < machine->stack_count; ++at)
        status = uform__torch_chain_append(machine, container, machine->stack[at]);
    if (status != UFORM_OK) return status;
    machine->stack_count = start;
    return push(machine, container);
}

/* Appends stack[start..stack_count) to the list or dict just below them (APPENDS, SETITEMS). */
static uform_status_t extend(uform__torch_machine_t *machine, uint8_t code, uint32_t start) {
    if (start <= fence(machine)) return underflow(machine, code);
    uint32_t target = machine->stack[start - 1];
    uform__torch_kind_t wanted = code == OP_APPENDS ? UFORM__TORCH_LIST : UFORM__TORCH_DICT;
    if (machine->values[target].kind != wanted)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "%s adds to %s, not %s", opcode_name(code),
                                        uform__torch_kind_name(machine->values[target].kind),
                                        uform__torch_kind_name(wanted));
    if (code == OP_SETITEMS && (machine->stack_count - start) % 2)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "SETITEMS has %u items after its MARK, not key-value pairs",
                                        machine->stack_count - start);
    uform_status_t status = UFORM_OK;
    for (uint32_t at = start; status == UFORM_OK && at < machine->stack_count; ++at)
        status = uform__torch_chain_append(machine, target, machine->stack[at]);
    machine->stack_count = start;
    return status;
}

/* ---- reading operands ---- */

typedef struct cursor_t {
    const uint8_t *bytes;
    size_t size, at;
} cursor_t;

static uform_status_t take(const uform__torch_machine_t *machine, cursor_t *cursor, uint8_t code, uint64_t count,
                           const uint8_t **out) {
    if (count > cursor->size - cursor->at)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "the pickle ends inside %s, which needs %" PRIu64 " more bytes where %zu remain",
                                        opcode_name(code), count, cursor->size - cursor->at);
    *out = cursor->bytes + cursor->at;
    cursor->at += (size_t)count;
    return UFORM_OK;
}

static uint64_t little_endian(const uint8_t *bytes, unsigned count) {
    uint64_t value = 0;
    for (unsigned index = count; index-- > 0;) value = value << 8 | bytes[index];
    return value;
}

/* Reads a length of `width` bytes, then that many bytes, and pushes them as a string (or bytes). */
static uform_status_t push_string(uform__torch_machine_t *machine, cursor_t *cursor, uint8_t code, unsigned width,
                                  int is_bytes) {
    const uint8_t *field;
    uform_status_t status = take(machine, cursor, code, width, &field);
    if (status != UFORM_OK) return status;
    uint64_t length = little_endian(field, width);
    if (code == OP_BINSTRING && length >> 31) /* a signed 32-bit length in pickle.py */
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "BINSTRING has a negative length");
    const uint8_t *text;
    status = take(machine, cursor, code, length, &text);
    if (status != UFORM_OK) return status;
    uint32_t index;
    status = push_new(machine, UFORM__TORCH_STRING, &index);
    if (status != UFORM_OK) return status;
    uform__torch_value_t *value = &machine->values[index];
    value->flag = (uint8_t)is_bytes;
    value->count = (uint32_t)length; /* below UFORM__TORCH_MAX_PICKLE */
    value->as.offset = (uint64_t)(text - machine->bytes);
    return UFORM_OK;
}

/* LONG1: a little-endian two's complement integer of 0 to 255 bytes. */
static uform_status_t push_long1(uform__torch_machine_t *machine, cursor_t *cursor) {
    const uint8_t *field;
    uform_status_t status = take(machine, cursor, OP_LONG1, 1, &field);
    if (status != UFORM_OK) return status;
    unsigned count = field[0];
    status = take(machine, cursor, OP_LONG1, count, &field);
    if (status != UFORM_OK) return status;
    if (count > 8) return push_integer(machine, UFORM__TORCH_BIGINT, 0);
    uint64_t bits = little_endian(field, count);
    if (count && count < 8 && field[count - 1] & 0x80) bits |= ~(uint64_t)0 << (8 * count); /* sign-extend */
    return push_integer(machine, UFORM__TORCH_INT, (int64_t)bits);
}

/* Stores `value` in memo slot `slot`. The pickler numbers slots in order, one per new object,
 * so a slot far beyond the objects built so far is refused before any memory is spent on it. */
static uform_status_t memo_put(uform__torch_machine_t *machine, uint64_t slot, uint32_t value) {
    uint64_t limit = 2 * (uint64_t)machine->value_count + 1024;
    if (slot >= limit)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "memo slot %" PRIu64 " is far beyond the %u objects built so far", slot,
                                        machine->value_count);
    uint32_t old_capacity = machine->memo_capacity;
    if (!uform__torch_grow((void **)&machine->memo, &machine->memo_capacity, sizeof *machine->memo, (uint32_t)slot + 1))
        return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate %" PRIu64 " memo slots", slot + 1);
    for (uint32_t fill = old_capacity; fill < machine->memo_capacity; ++fill) machine->memo[fill] = NIL;
    if (machine->memo[slot] == NIL) machine->memo_count += 1;
    machine->memo[slot] = value;
    return UFORM_OK;
}

static uform_status_t memo_get(uform__torch_machine_t *machine, uint64_t slot) {
    if (slot >= machine->memo_capacity || machine->memo[slot] == NIL)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "memo slot %" PRIu64 " is read before anything is stored in it",
                                        slot);
    return push(machine, machine->memo[slot]);
}

/* GLOBAL: "module\nname\n". */
static uform_status_t read_line(const uform__torch_machine_t *machine, cursor_t *cursor, const char *what,
                                const uint8_t **line, size_t *length) {
    size_t remaining = cursor->size - cursor->at;
    const uint8_t *start = cursor->bytes + cursor->at;
    const uint8_t *newline = memchr(start, '\n', remaining < MAX_GLOBAL_LINE ? remaining : MAX_GLOBAL_LINE);
    if (!newline)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "GLOBAL's %s does not end in a newline within %d bytes",
                                        what, MAX_GLOBAL_LINE);
    *line = start;
    *length = (size_t)(newline - start);
    cursor->at += *length + 1;
    return UFORM_OK;
}

static uform_status_t push_global(uform__torch_machine_t *machine, const uint8_t *module, size_t module_length,
                                  const uint8_t *name, size_t name_length) {
    uint32_t entry, index;
    uform_status_t status = uform__torch_global_find(machine, module, module_length, name, name_length, &entry);
    if (status == UFORM_OK) status = push_new(machine, UFORM__TORCH_GLOBAL, &index);
    if (status == UFORM_OK) machine->values[index].count = entry;
    return status;
}

static uform_status_t stack_global(uform__torch_machine_t *machine) {
    uint32_t name, module;
    uform_status_t status = pop(machine, OP_STACK_GLOBAL, &name);
    if (status == UFORM_OK) status = pop(machine, OP_STACK_GLOBAL, &module);
    if (status != UFORM_OK) return status;
    const uform__torch_value_t *module_value = &machine->values[module], *name_value = &machine->values[name];
    if (module_value->kind != UFORM__TORCH_STRING || name_value->kind != UFORM__TORCH_STRING)
        return uform__torch_pickle_fail(machine, UFORM_FORMAT, "STACK_GLOBAL takes two strings, found %s and %s",
                                        uform__torch_kind_name(module_value->kind),
                                        uform__torch_kind_name(name_value->kind));
    return push_global(machine, machine->bytes + module_value->as.offset, module_value->count,
                       machine->bytes + name_value->as.offset, name_value->count);
}

/* REDUCE, NEWOBJ, BUILD and BINPERSID: pop their operands and hand them to torch_globals.c. */
static uform_status_t call(uform__torch_machine_t *machine, uint8_t code) {
    uint32_t second, first, result;
    uform_status_t status = pop(machine, code, &second);
    if (status != UFORM_OK) return status;
    if (code == OP_BINPERSID) {
        status = uform__torch_persistent(machine, second, &result);
        return status == UFORM_OK ? push(machine, result) : status;
    }
    if (code == OP_BUILD) {
        status = top(machine, code, &first);
        return status == UFORM_OK ? uform__torch_build(machine, first, second) : status;
    }
    status = pop(machine, code, &first);
    if (status != UFORM_OK) return status;
    status = code == OP_REDUCE ? uform__torch_reduce(machine, first, second, &result)
                               : uform__torch_newobj(machine, first, second, &result);
    return status == UFORM_OK ? push(machine, result) : status;
}

/* TUPLE1, TUPLE2, TUPLE3: the top `count` items become a tuple. */
static uform_status_t small_tuple(uform__torch_machine_t *machine, uint8_t code, uint32_t count) {
    if (machine->stack_count - fence(machine) < count) return underflow(machine, code);
    return collect(machine, UFORM__TORCH_TUPLE, machine->stack_count - count);
}

/* Runs one opcode; `*stopped` is set by STOP. */
static uform_status_t step(uform__torch_machine_t *machine, cursor_t *cursor, uint8_t code, int *stopped) {
    const uint8_t *field;
    uint32_t value, start, index;
    uform_status_t status = UFORM_OK;
    switch (code) {
    case OP_PROTO:
        if ((status = take(machine, cursor, code, 1, &field)) != UFORM_OK) return status;
        if (field[0] > HIGHEST_PROTOCOL)
            return uform__torch_pickle_fail(machine, UFORM_UNSUPPORTED, "pickle protocol %u is newer than %d", field[0],
                                            HIGHEST_PROTOCOL);
        return UFORM_OK;
    case OP_FRAME: /* frames only group opcodes for buffered reading: the bytes are already here */
        if ((status = take(machine, cursor, code, 8, &field)) != UFORM_OK) return status;
        if (little_endian(field, 8) > cursor->size - cursor->at)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "FRAME of %" PRIu64 " bytes runs past the pickle's end",
                                            little_endian(field, 8));
        return UFORM_OK;
    case OP_STOP:
        if ((status = pop(machine, code, &machine->root)) != UFORM_OK) return status;
        *stopped = 1;
        return UFORM_OK;
    case OP_MARK:
        if (machine->mark_count >= UFORM__TORCH_MAX_MARKS)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "more than %u MARKs are open at once",
                                            UFORM__TORCH_MAX_MARKS);
        if (!uform__torch_grow((void **)&machine->marks, &machine->mark_capacity, sizeof *machine->marks, machine->mark_count + 1))
            return uform__torch_pickle_fail(machine, UFORM_OUT_OF_MEMORY, "cannot allocate %u marks", machine->mark_count + 1);
        machine->marks[machine->mark_count++] = machine->stack_count;
        return UFORM_OK;
    case OP_POP: /* as _pickle.c: an empty stack above the fence pops the mark instead */
        if (machine->stack_count > fence(machine)) --machine->stack_count;
        else if (machine->mark_count) --machine->mark_count;
        else return underflow(machine, code);
        return UFORM_OK;
    case OP_POP_MARK:
        if ((status = pop_mark(machine, code, &start)) != UFORM_OK) return status;
        machine->stack_count = start;
        return UFORM_OK;
    case OP_DUP:
        if ((status = top(machine, code, &value)) != UFORM_OK) return status;
        return push(machine, value);
    case OP_NONE: return push_new(machine, UFORM__TORCH_NONE, &index);
    case OP_NEWTRUE: return push_integer(machine, UFORM__TORCH_BOOL, 1);
    case OP_NEWFALSE: return push_integer(machine, UFORM__TORCH_BOOL, 0);
    case OP_BININT:
        if ((status = take(machine, cursor, code, 4, &field)) != UFORM_OK) return status;
        return push_integer(machine, UFORM__TORCH_INT, (int32_t)(uint32_t)little_endian(field, 4));
    case OP_BININT1:
        if ((status = take(machine, cursor, code, 1, &field)) != UFORM_OK) return status;
        return push_integer(machine, UFORM__TORCH_INT, field[0]);
    case OP_BININT2:
        if ((status = take(machine, cursor, code, 2, &field)) != UFORM_OK) return status;
        return push_integer(machine, UFORM__TORCH_INT, (int64_t)little_endian(field, 2));
    case OP_LONG1: return push_long1(machine, cursor);
    case OP_BINFLOAT: {
        if ((status = take(machine, cursor, code, 8, &field)) != UFORM_OK) return status;
        uint64_t bits = 0;
        for (int byte = 0; byte < 8; ++byte) bits = bits << 8 | field[byte]; /* big-endian */
        if ((status = push_new(machine, UFORM__TORCH_FLOAT, &index)) != UFORM_OK) return status;
        memcpy(&machine->values[index].as.real, &bits, sizeof bits);
        return UFORM_OK;
    }
    case OP_SHORT_BINUNICODE: return push_string(machine, cursor, code, 1, 0);
    case OP_BINUNICODE: return push_string(machine, cursor, code, 4, 0);
    case OP_BINUNICODE8: return push_string(machine, cursor, code, 8, 0);
    case OP_SHORT_BINSTRING: return push_string(machine, cursor, code, 1, 1);
    case OP_BINSTRING: return push_string(machine, cursor, code, 4, 1);
    case OP_SHORT_BINBYTES: return push_string(machine, cursor, code, 1, 1);
    case OP_BINBYTES: return push_string(machine, cursor, code, 4, 1);
    case OP_BINBYTES8: return push_string(machine, cursor, code, 8, 1);
    case OP_EMPTY_TUPLE: return push_new(machine, UFORM__TORCH_TUPLE, &index);
    case OP_EMPTY_LIST: return push_new(machine, UFORM__TORCH_LIST, &index);
    case OP_EMPTY_DICT: return push_new(machine, UFORM__TORCH_DICT, &index);
    case OP_EMPTY_SET: return push_new(machine, UFORM__TORCH_OPAQUE, &index);
    case OP_TUPLE1: return small_tuple(machine, code, 1);
    case OP_TUPLE2: return small_tuple(machine, code, 2);
    case OP_TUPLE3: return small_tuple(machine, code, 3);
    case OP_TUPLE:
    case OP_LIST:
    case OP_DICT:
        if ((status = pop_mark(machine, code, &start)) != UFORM_OK) return status;
        if (code == OP_DICT && (machine->stack_count - start) % 2)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "DICT has %u items after its MARK, not key-value pairs",
                                            machine->stack_count - start);
        return collect(machine, code == OP_TUPLE ? UFORM__TORCH_TUPLE : code == OP_LIST ? UFORM__TORCH_LIST : UFORM__TORCH_DICT,
                       start);
    case OP_APPENDS:
    case OP_SETITEMS:
        if ((status = pop_mark(machine, code, &start)) != UFORM_OK) return status;
        return extend(machine, code, start);
    case OP_APPEND:
    case OP_SETITEM:
        /* The same as APPENDS/SETITEMS over the top one or two items. */
        start = code == OP_APPEND ? 1 : 2;
        if (machine->stack_count - fence(machine) < start + 1) return underflow(machine, code);
        return extend(machine, code == OP_APPEND ? OP_APPENDS : OP_SETITEMS, machine->stack_count - start);
    case OP_BINPUT:
    case OP_LONG_BINPUT:
        if ((status = take(machine, cursor, code, code == OP_BINPUT ? 1 : 4, &field)) != UFORM_OK) return status;
        if ((status = top(machine, code, &value)) != UFORM_OK) return status;
        return memo_put(machine, little_endian(field, code == OP_BINPUT ? 1 : 4), value);
    case OP_MEMOIZE:
        if ((status = top(machine, code, &value)) != UFORM_OK) return status;
        return memo_put(machine, machine->memo_count, value);
    case OP_BINGET:
    case OP_LONG_BINGET:
        if ((status = take(machine, cursor, code, code == OP_BINGET ? 1 : 4, &field)) != UFORM_OK) return status;
        return memo_get(machine, little_endian(field, code == OP_BINGET ? 1 : 4));
    case OP_GLOBAL: {
        const uint8_t *module, *name;
        size_t module_length, name_length;
        if ((status = read_line(machine, cursor, "module", &module, &module_length)) != UFORM_OK) return status;
        if ((status = read_line(machine, cursor, "name", &name, &name_length)) != UFORM_OK) return status;
        return push_global(machine, module, module_length, name, name_length);
    }
    case OP_STACK_GLOBAL: return stack_global(machine);
    case OP_REDUCE:
    case OP_NEWOBJ:
    case OP_BUILD:
    case OP_BINPERSID: return call(machine, code);
    default:
        return uform__torch_pickle_fail(machine, UFORM_FORMAT,
                                        "opcode 0x%02x (%s) is not one torch.save writes, and a weights-only load "
                                        "refuses it",
                                        code, opcode_name(code));
    }
}

uform_status_t uform__torch_pickle_run(uform__torch_machine_t *machine, const uint8_t *bytes, size_t size,
                                       const char *source, uform_outcome_t *outcome) {
    machine->bytes = bytes;
    machine->size = size;
    machine->source = source;
    machine->outcome = outcome;
    if (size > UFORM__TORCH_MAX_PICKLE)
        return uform__torch_pickle_fail(machine, UFORM_UNSUPPORTED, "the pickle is %zu bytes, over the limit of %zu", size,
                                        UFORM__TORCH_MAX_PICKLE);
    cursor_t cursor = {bytes, size, 0};
    int stopped = 0;
    while (!stopped) {
        machine->opcode_at = cursor.at;
        if (cursor.at >= size)
            return uform__torch_pickle_fail(machine, UFORM_FORMAT, "the pickle ends without a STOP opcode");
        uint8_t code = bytes[cursor.at++];
        uform_status_t status = step(machine, &cursor, code, &stopped);
        if (status != UFORM_OK) return status;
    }
    machine->end = cursor.at;
    return UFORM_OK;
}

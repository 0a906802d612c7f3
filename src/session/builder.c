/*
 * The program builder: records values, parameters, constants, operations and outputs, and writes
 * them in the wire layout of docs/wire.md. It checks only what it must to write (and the
 * operation's type rule when asked to infer), so tests can also write malformed programs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

typedef struct record_t {
    uint32_t value;
    char *name;
    void *payload;
    size_t payload_size;
} record_t;

typedef struct builder_operation_t {
    uint16_t opcode;
    uint32_t result, operand_count, attribute_count;
    uint32_t *operands;
    int64_t *attributes;
} builder_operation_t;

struct uform_program_builder_s {
    uform__session_type_t *values;
    size_t value_count, value_capacity;
    record_t *parameters, *constants, *outputs;
    size_t parameter_count, parameter_capacity, constant_count, constant_capacity, output_count, output_capacity;
    builder_operation_t *operations;
    size_t operation_count, operation_capacity;
    unsigned char *bytes;
    size_t length, capacity;
    char cause[UFORM__SESSION_CAUSE_CAPACITY];
};

static uform_session_status_t fail(uform_program_builder_t builder, uform_session_status_t status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static uform_session_status_t fail(uform_program_builder_t builder, uform_session_status_t status, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(builder->cause, sizeof builder->cause, format, arguments);
    va_end(arguments);
    return status;
}

/* Grows `*array` (of `size`-byte items) to hold one more; answers 0 when memory ran out. */
static int reserve(void **array, size_t *capacity, size_t count, size_t size) {
    if (count < *capacity) return 1;
    size_t grown = *capacity ? *capacity * 2 : 8;
    void *larger = uform__session_realloc(*array, grown * size);
    if (!larger) return 0;
    *array = larger;
    *capacity = grown;
    return 1;
}

uform_session_status_t uform_program_builder_init(uform_program_builder_t *builder) {
    if (!builder) return UFORM_SESSION_INVALID_PROGRAM;
    *builder = (uform_program_builder_t)uform__session_calloc(1, sizeof **builder);
    return *builder ? UFORM_SESSION_OK : UFORM_SESSION_OUT_OF_MEMORY;
}

static void free_records(record_t *records, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        free(records[i].name);
        free(records[i].payload);
    }
    free(records);
}

void uform_program_builder_free(uform_program_builder_t builder) {
    if (!builder) return;
    free_records(builder->parameters, builder->parameter_count);
    free_records(builder->constants, builder->constant_count);
    free_records(builder->outputs, builder->output_count);
    for (size_t i = 0; i < builder->operation_count; ++i) {
        free(builder->operations[i].operands);
        free(builder->operations[i].attributes);
    }
    free(builder->operations);
    free(builder->values);
    free(builder->bytes);
    free(builder);
}

static uform_session_status_t add_value(uform_program_builder_t builder, const uform__session_type_t *type,
                                        uint32_t *value) {
    if (builder->value_count >= UFORM__SESSION_MAX_VALUES)
        return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "more than %u values", UFORM__SESSION_MAX_VALUES);
    if (!reserve((void **)&builder->values, &builder->value_capacity, builder->value_count, sizeof *builder->values))
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a value");
    builder->values[builder->value_count] = *type;
    if (value) *value = (uint32_t)builder->value_count;
    ++builder->value_count;
    return UFORM_SESSION_OK;
}

static uform_session_status_t make_type(uform_program_builder_t builder, uform_session_dtype_t dtype, size_t rank,
                                        const size_t *dims, uform__session_type_t *type) {
    memset(type, 0, sizeof *type);
    if (rank > UFORM_SESSION_MAX_RANK) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "rank %zu exceeds %d", rank, UFORM_SESSION_MAX_RANK);
    if (rank && !dims) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "NULL dims for rank %zu", rank);
    if ((unsigned)dtype > 255u) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "dtype %u does not fit a byte", (unsigned)dtype);
    type->dtype = (uint8_t)dtype;
    type->rank = (uint8_t)rank;
    for (size_t axis = 0; axis < rank; ++axis) type->dims[axis] = dims[axis];
    uform__session_type_finish(type); // leaves count and bytes 0 for a type compile will refuse
    return UFORM_SESSION_OK;
}

static char *copy_name(const char *name) {
    if (!name || !*name) return NULL;
    size_t length = strlen(name);
    char *copy = (char *)uform__session_malloc(length + 1);
    if (copy) memcpy(copy, name, length + 1);
    return copy;
}

uform_session_status_t uform_program_builder_parameter(uform_program_builder_t builder, const char *name,
                                                       uform_session_dtype_t dtype, size_t rank, const size_t *dims,
                                                       uint32_t *value) {
    if (!builder) return UFORM_SESSION_INVALID_PROGRAM;
    uform__session_type_t type;
    uform_session_status_t status = make_type(builder, dtype, rank, dims, &type);
    if (status) return status;
    if (name && strlen(name) > UFORM__SESSION_MAX_NAME) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "name too long");
    if (!reserve((void **)&builder->parameters, &builder->parameter_capacity, builder->parameter_count,
                 sizeof *builder->parameters))
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a parameter");
    record_t *record = &builder->parameters[builder->parameter_count];
    memset(record, 0, sizeof *record);
    record->name = copy_name(name);
    if (name && *name && !record->name) return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a name");
    if ((status = add_value(builder, &type, &record->value))) {
        free(record->name);
        return status;
    }
    ++builder->parameter_count;
    if (value) *value = record->value;
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_program_builder_constant(uform_program_builder_t builder, uform_session_dtype_t dtype,
                                                      size_t rank, const size_t *dims, const void *payload,
                                                      size_t payload_size, uint32_t *value) {
    if (!builder) return UFORM_SESSION_INVALID_PROGRAM;
    if (payload_size && !payload) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "NULL payload of %zu bytes", payload_size);
    uform__session_type_t type;
    uform_session_status_t status = make_type(builder, dtype, rank, dims, &type);
    if (status) return status;
    if (!reserve((void **)&builder->constants, &builder->constant_capacity, builder->constant_count,
                 sizeof *builder->constants))
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a constant");
    record_t *record = &builder->constants[builder->constant_count];
    memset(record, 0, sizeof *record);
    record->payload = uform__session_malloc(payload_size ? payload_size : 1);
    if (!record->payload) return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a payload");
    if (payload_size) memcpy(record->payload, payload, payload_size);
    record->payload_size = payload_size;
    if ((status = add_value(builder, &type, &record->value))) {
        free(record->payload);
        return status;
    }
    ++builder->constant_count;
    if (value) *value = record->value;
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_program_builder_operation(uform_program_builder_t builder, uform_session_opcode_t opcode,
                                                       const uint32_t *operands, size_t operand_count,
                                                       const int64_t *attributes, size_t attribute_count,
                                                       uform_session_dtype_t dtype, size_t rank, const size_t *dims,
                                                       uint32_t *value) {
    if (!builder) return UFORM_SESSION_INVALID_PROGRAM;
    if ((operand_count && !operands) || (attribute_count && !attributes))
        return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "NULL operands or attributes");
    if (operand_count > UFORM__SESSION_MAX_OPERANDS || attribute_count > UFORM__SESSION_MAX_ATTRIBUTES)
        return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "%zu operands and %zu attributes (at most %d and %d)",
                    operand_count, attribute_count, UFORM__SESSION_MAX_OPERANDS, UFORM__SESSION_MAX_ATTRIBUTES);
    if ((unsigned)opcode > 0xFFFFu) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "opcode %u does not fit 16 bits", (unsigned)opcode);
    uform__session_type_t type;
    uform_session_status_t status;
    if (rank == UFORM_SESSION_INFER) {
        const uform__session_type_t *types[UFORM__SESSION_MAX_OPERANDS];
        for (size_t i = 0; i < operand_count; ++i) {
            if (operands[i] >= builder->value_count)
                return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "operand %zu is value %u, not added yet", i, operands[i]);
            types[i] = &builder->values[operands[i]];
        }
        uform__session_error_t error;
        memset(&type, 0, sizeof type);
        type.dtype = (uint8_t)dtype;
        if (uform__session_infer((uint16_t)opcode, types, operand_count, attributes, attribute_count, NULL, &type, &error))
            return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "%s", error.cause);
    } else if ((status = make_type(builder, dtype, rank, dims, &type))) {
        return status;
    }
    if (!reserve((void **)&builder->operations, &builder->operation_capacity, builder->operation_count,
                 sizeof *builder->operations))
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for an operation");
    builder_operation_t *op = &builder->operations[builder->operation_count];
    memset(op, 0, sizeof *op);
    op->opcode = (uint16_t)opcode;
    op->operand_count = (uint32_t)operand_count;
    op->attribute_count = (uint32_t)attribute_count;
    op->operands = (uint32_t *)uform__session_malloc(operand_count * 4u + 4u);
    op->attributes = (int64_t *)uform__session_malloc(attribute_count * 8u + 8u);
    if (!op->operands || !op->attributes) {
        free(op->operands);
        free(op->attributes);
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for an operation");
    }
    if (operand_count) memcpy(op->operands, operands, operand_count * 4u);
    if (attribute_count) memcpy(op->attributes, attributes, attribute_count * 8u);
    if ((status = add_value(builder, &type, &op->result))) {
        free(op->operands);
        free(op->attributes);
        return status;
    }
    ++builder->operation_count;
    if (value) *value = op->result;
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_program_builder_output(uform_program_builder_t builder, const char *name, uint32_t value) {
    if (!builder) return UFORM_SESSION_INVALID_PROGRAM;
    if (name && strlen(name) > UFORM__SESSION_MAX_NAME) return fail(builder, UFORM_SESSION_INVALID_PROGRAM, "name too long");
    if (!reserve((void **)&builder->outputs, &builder->output_capacity, builder->output_count, sizeof *builder->outputs))
        return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for an output");
    record_t *record = &builder->outputs[builder->output_count];
    memset(record, 0, sizeof *record);
    record->value = value;
    record->name = copy_name(name);
    if (name && *name && !record->name) return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a name");
    ++builder->output_count;
    return UFORM_SESSION_OK;
}

static int put(uform_program_builder_t builder, const void *data, size_t size) {
    if (builder->capacity - builder->length < size) {
        size_t grown = builder->capacity ? builder->capacity : 256;
        while (grown - builder->length < size) grown *= 2;
        unsigned char *larger = (unsigned char *)uform__session_realloc(builder->bytes, grown);
        if (!larger) return 0;
        builder->bytes = larger;
        builder->capacity = grown;
    }
    if (size) memcpy(builder->bytes + builder->length, data, size); // this build is little-endian, like the format
    builder->length += size;
    return 1;
}
static int put_u32(uform_program_builder_t b, uint32_t v) { return put(b, &v, 4); }
static int put_u64(uform_program_builder_t b, uint64_t v) { return put(b, &v, 8); }
static int put_string(uform_program_builder_t b, const char *s) {
    uint32_t length = s ? (uint32_t)strlen(s) : 0;
    return put_u32(b, length) && put(b, s, length);
}

uform_session_status_t uform_program_builder_finish(uform_program_builder_t builder, const void **bytes, size_t *length) {
    if (!builder || !bytes || !length) return builder ? fail(builder, UFORM_SESSION_INVALID_PROGRAM, "NULL out-pointer")
                                                      : UFORM_SESSION_INVALID_PROGRAM;
    builder->length = 0;
    int ok = put(builder, "UFTP", 4) && put_u32(builder, UFORM_SESSION_WIRE_VERSION) &&
             put_u32(builder, (uint32_t)builder->value_count) && put_u32(builder, (uint32_t)builder->parameter_count) &&
             put_u32(builder, (uint32_t)builder->constant_count) && put_u32(builder, (uint32_t)builder->operation_count) &&
             put_u32(builder, (uint32_t)builder->output_count);
    for (size_t i = 0; ok && i < builder->value_count; ++i) {
        const uform__session_type_t *type = &builder->values[i];
        ok = put(builder, &type->dtype, 1) && put(builder, &type->rank, 1);
        for (unsigned axis = 0; ok && axis < type->rank; ++axis) ok = put_u64(builder, type->dims[axis]);
    }
    for (size_t i = 0; ok && i < builder->parameter_count; ++i)
        ok = put_u32(builder, builder->parameters[i].value) && put_string(builder, builder->parameters[i].name);
    for (size_t i = 0; ok && i < builder->constant_count; ++i) {
        const record_t *c = &builder->constants[i];
        ok = put_u32(builder, c->value) && put_u64(builder, c->payload_size) && put(builder, c->payload, c->payload_size);
    }
    for (size_t i = 0; ok && i < builder->operation_count; ++i) {
        const builder_operation_t *op = &builder->operations[i];
        ok = put(builder, &op->opcode, 2) && put_u32(builder, op->result) && put_u32(builder, op->operand_count) &&
             put_u32(builder, op->attribute_count) && put(builder, op->operands, op->operand_count * 4u) &&
             put(builder, op->attributes, op->attribute_count * 8u);
    }
    for (size_t i = 0; ok && i < builder->output_count; ++i)
        ok = put_u32(builder, builder->outputs[i].value) && put_string(builder, builder->outputs[i].name);
    if (!ok) return fail(builder, UFORM_SESSION_OUT_OF_MEMORY, "no memory for the wire bytes");
    *bytes = builder->bytes;
    *length = builder->length;
    builder->cause[0] = 0;
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_program_builder_type(uform_program_builder_t builder, uint32_t value,
                                                  uform_session_dtype_t *dtype, size_t *rank, size_t *dims) {
    if (!builder || value >= builder->value_count) return UFORM_SESSION_INVALID_PROGRAM;
    const uform__session_type_t *type = &builder->values[value];
    if (dtype) *dtype = (uform_session_dtype_t)type->dtype;
    if (rank) *rank = type->rank;
    if (dims)
        for (unsigned axis = 0; axis < type->rank; ++axis) dims[axis] = type->dims[axis];
    return UFORM_SESSION_OK;
}

const char *uform_program_builder_cause(uform_program_builder_t builder) { return builder ? builder->cause : ""; }

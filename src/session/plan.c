/*
 * Compiling a checked program into a plan:
 *   1. Steps. Consecutive elementwise operations with the same result dims become one FUSED step
 *      (a single blocked pass over the data with intermediate values in registers); every other
 *      operation is a SINGLE step; a RESHAPE is no step at all (its result aliases its operand's
 *      bytes) and ends the current chain.
 *   2. Homes. Parameters are read from the caller's input buffers and constants from the
 *      program's copies; a computed value an output names is computed straight into that output
 *      buffer; chain-internal values live only in registers; everything else lives in scratch.
 *      Outputs that cannot be served in place (a parameter, a constant, a value named twice) get a
 *      COPY step at the end. No step ever writes a parameter's buffer.
 *   3. Liveness. Each scratch value lives from its defining step to its last reader; offsets are
 *      chosen first-fit among the values alive at the same time, so dead buffers are reused.
 *   4. Workspace. One region after the values holds the largest step's temporaries.
 */
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

#define NONE UINT32_MAX
#define ALIGN64(x) (((x) + (size_t)63) & ~(size_t)63)

void uform__session_plan_free(uform__session_plan_t *plan) {
    if (!plan) return;
    if (plan->steps)
        for (uint32_t i = 0; i < plan->step_count; ++i) {
            free(plan->steps[i].fused);
            free(plan->steps[i].loads);
            free(plan->steps[i].register_dtypes);
        }
    free(plan->steps);
    free(plan->storage);
    free(plan->addresses);
    free(plan->input_descriptors);
    free(plan->output_descriptors);
    uform__session_ir_free(&plan->ir);
    memset(plan, 0, sizeof *plan);
}

static int same_dims(const uform__session_type_t *a, const uform__session_type_t *b) {
    if (a->rank != b->rank) return 0;
    for (unsigned axis = 0; axis < a->rank; ++axis)
        if (a->dims[axis] != b->dims[axis]) return 0;
    return 1;
}

typedef struct interval_t {
    size_t offset, size;
    uint32_t end;
} interval_t;

/* Fills registers, loads and store flags of the FUSED step made of operations [first, first + count). */
static uform_session_status_t build_fused(uform__session_plan_t *plan, uform__session_step_t *step, uint32_t first,
                                          uint32_t count, uint32_t *register_of, uform__session_error_t *error) {
    const uform__session_ir_t *ir = &plan->ir;
    step->fused = (uform__session_fused_op_t *)uform__session_calloc(count, sizeof *step->fused);
    step->loads = (uform__session_fused_load_t *)uform__session_calloc((size_t)count * 3u, sizeof *step->loads);
    step->register_dtypes = (uint8_t *)uform__session_calloc((size_t)count * 4u, 1);
    if (!step->fused || !step->loads || !step->register_dtypes)
        return uform__session_error(error, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a fused step");
    step->fused_count = count;
    for (uint32_t i = 0; i < count; ++i) {
        const uform__session_operation_t *op = &ir->operations[first + i];
        uform__session_fused_op_t *member = &step->fused[i];
        member->operation = first + i;
        for (uint32_t j = 0; j < op->operand_count; ++j) {
            uint32_t v = op->operands[j];
            if (register_of[v] == NONE) { // a value from outside the chain (members set theirs below)
                register_of[v] = step->register_count;
                step->register_dtypes[step->register_count] = ir->types[v].dtype;
                step->loads[step->load_count].value = v;
                step->loads[step->load_count].reg = step->register_count;
                ++step->load_count;
                ++step->register_count;
            }
            member->operand_registers[j] = register_of[v];
        }
        register_of[op->result] = step->register_count;
        step->register_dtypes[step->register_count] = ir->types[op->result].dtype;
        member->result_register = step->register_count++;
        member->store = plan->storage[op->result].home != UFORM__SESSION_HOME_NONE;
    }
    for (uint32_t i = 0; i < step->load_count; ++i) register_of[step->loads[i].value] = NONE;
    for (uint32_t i = 0; i < count; ++i) register_of[ir->operations[first + i].result] = NONE;
    return UFORM_SESSION_OK;
}

/*
 * Recognises `y = matmul(a, b)` (F32) whose only reader is `add(y, bias)` with a bias of dims
 * [..., 1, N] defined before the matmul, optionally followed by `gelu` as the sum's only reader:
 * the GEMM's epilogue then adds the bias and applies GELU while the tile is in registers (the
 * engine's forward_f32 with bias and gelu), and neither the product nor the sum is materialised.
 * Marks the absorbed operations and hidden values and fills the step's epilogue. Answers 1 when
 * it matched.
 */
static int epilogue(uform__session_plan_t *plan, uint32_t i, const uint32_t *uses, const uint32_t *consumer,
                    uint32_t *absorbed, uint8_t *hidden, uint32_t step) {
    const uform__session_ir_t *ir = &plan->ir;
    uint32_t product = ir->operations[i].result;
    const uform__session_type_t *type = &ir->types[product];
    if (type->dtype != UFORM_SESSION_DTYPE_F32 || uses[product] != 1 || consumer[product] == NONE) return 0;
    uint32_t j = consumer[product];
    const uform__session_operation_t *add = &ir->operations[j];
    if (add->opcode != UFORM_SESSION_OP_ADD) return 0;
    uint32_t bias = add->operands[0] == product ? add->operands[1] : add->operands[0];
    const uform__session_type_t *b = &ir->types[bias];
    if (bias == product || b->dtype != UFORM_SESSION_DTYPE_F32 || b->rank == 0 || b->rank > type->rank ||
        b->dims[b->rank - 1] != type->dims[type->rank - 1] || b->count != b->dims[b->rank - 1])
        return 0;
    if (ir->origins[bias] == UFORM__SESSION_ORIGIN_OPERATION && ir->definers[bias] >= i) return 0;
    uint32_t sum = add->result, result = sum;
    absorbed[j] = step;
    hidden[product] = 1;
    uint8_t gelu = 0;
    if (uses[sum] == 1 && consumer[sum] != NONE && ir->operations[consumer[sum]].opcode == UFORM_SESSION_OP_GELU) {
        absorbed[consumer[sum]] = step;
        hidden[sum] = 1;
        result = ir->operations[consumer[sum]].result;
        gelu = 1;
    }
    plan->steps[step].epilogue_bias = bias;
    plan->steps[step].epilogue_result = result;
    plan->steps[step].epilogue_gelu = gelu;
    return 1;
}

/* What a caller is told about an input or output: its type's dtype, shape and bytes, aligned to
 * its element. The dims point into the program's own types. */
static void describe(const uform__session_type_t *type, uform_descriptor_t *d) {
    d->dtype = (uform_session_dtype_t)type->dtype;
    d->rank = type->rank;
    d->dims = type->dims;
    d->byte_size = type->bytes;
    d->alignment = uform__session_dtype_size(type->dtype);
}

static uform_session_status_t plan_program(uform__session_plan_t *plan, uform__session_error_t *error) {
    const uform__session_ir_t *ir = &plan->ir;
    uint32_t V = ir->value_count, O = ir->operation_count, P = ir->parameter_count, Q = ir->output_count;
    uform_session_status_t status = UFORM_SESSION_OK;
    for (uint32_t v = 0; v < V; ++v)
        if ((uint64_t)ir->types[v].bytes > UFORM_SESSION_BYTE_LIMIT)
            return uform__session_error(error, UFORM_SESSION_COMPILE_FAILED, "value %u takes %zu bytes, above the limit of 2^40",
                                        v, ir->types[v].bytes);

    size_t n = V ? V : 1;
    uint32_t *root = (uint32_t *)uform__session_malloc(n * sizeof *root);
    uint32_t *op_step = (uint32_t *)uform__session_malloc(((size_t)O + 1u) * sizeof *op_step);
    uint32_t *last_use = (uint32_t *)uform__session_malloc(n * sizeof *last_use);
    uint8_t *outside = (uint8_t *)uform__session_calloc(n, 1);
    uint8_t *served = (uint8_t *)uform__session_calloc(Q, 1);
    uint32_t *register_of = (uint32_t *)uform__session_malloc(n * sizeof *register_of);
    interval_t *live = (interval_t *)uform__session_malloc(n * sizeof *live);
    uint32_t *uses = (uint32_t *)uform__session_calloc(n, sizeof *uses);
    uint32_t *consumer = (uint32_t *)uform__session_malloc(n * sizeof *consumer);
    uint32_t *absorbed = (uint32_t *)uform__session_malloc(((size_t)O + 1u) * sizeof *absorbed);
    uint8_t *hidden = (uint8_t *)uform__session_calloc(n, 1);
    uint32_t *group_first = (uint32_t *)uform__session_malloc(((size_t)O + Q + 1u) * sizeof *group_first);
    plan->storage = (uform__session_storage_t *)uform__session_calloc(n, sizeof *plan->storage);
    plan->steps = (uform__session_step_t *)uform__session_calloc((size_t)O + Q + 1u, sizeof *plan->steps);
    plan->addresses = (void **)uform__session_calloc(n, sizeof *plan->addresses);
    plan->input_descriptors = (uform_descriptor_t *)uform__session_calloc(P + 1u, sizeof *plan->input_descriptors);
    plan->output_descriptors = (uform_descriptor_t *)uform__session_calloc(Q, sizeof *plan->output_descriptors);
    if (!root || !op_step || !last_use || !outside || !served || !register_of || !live || !uses || !consumer || !absorbed ||
        !hidden || !group_first || !plan->storage ||
        !plan->steps || !plan->addresses || !plan->input_descriptors || !plan->output_descriptors) {
        status = uform__session_error(error, UFORM_SESSION_OUT_OF_MEMORY, "no memory for the plan");
        goto done;
    }
    for (uint32_t v = 0; v < V; ++v) root[v] = v, last_use[v] = NONE, register_of[v] = NONE, consumer[v] = NONE;
    for (uint32_t i = 0; i < O; ++i) absorbed[i] = NONE;

    // Readers of each value (operations and outputs), and the one operation that reads it.
    for (uint32_t i = 0; i < O; ++i) {
        const uform__session_operation_t *op = &ir->operations[i];
        for (uint32_t j = 0; j < op->operand_count; ++j) ++uses[op->operands[j]], consumer[op->operands[j]] = i;
    }
    for (uint32_t k = 0; k < Q; ++k) ++uses[ir->outputs[k].value];

    // 1. Steps, in program order.
    uint32_t steps = 0, open = NONE;
    for (uint32_t i = 0; i < O; ++i) {
        const uform__session_operation_t *op = &ir->operations[i];
        if (absorbed[i] != NONE) { // part of an earlier matmul's epilogue: no step of its own
            op_step[i] = absorbed[i];
            continue;
        }
        plan->steps[steps].epilogue_bias = plan->steps[steps].epilogue_result = NONE;
        if (op->opcode == UFORM_SESSION_OP_MATMUL && epilogue(plan, i, uses, consumer, absorbed, hidden, steps)) {
            open = NONE;
            plan->steps[steps].kind = UFORM__SESSION_STEP_SINGLE;
            plan->steps[steps].operation = i;
            op_step[i] = steps++;
            continue;
        }
        if (op->opcode == UFORM_SESSION_OP_RESHAPE) {
            root[op->result] = root[op->operands[0]];
            op_step[i] = NONE;
            open = NONE;
            continue;
        }
        if (uform__session_is_elementwise(op->opcode)) {
            if (open != NONE && same_dims(&ir->types[ir->operations[group_first[open]].result], &ir->types[op->result])) {
                op_step[i] = open;
                ++plan->steps[open].fused_count;
                continue;
            }
            open = steps;
            plan->steps[steps].kind = UFORM__SESSION_STEP_FUSED;
            plan->steps[steps].fused_count = 1;
            group_first[steps] = i;
        } else {
            open = NONE;
            plan->steps[steps].kind = UFORM__SESSION_STEP_SINGLE;
            plan->steps[steps].operation = i;
        }
        op_step[i] = steps++;
    }

    // Readers: the last step that reads each root, and whether a chain's value escapes its chain.
    for (uint32_t i = 0; i < O; ++i) {
        const uform__session_operation_t *op = &ir->operations[i];
        if (op_step[i] == NONE) continue;
        for (uint32_t j = 0; j < op->operand_count; ++j) {
            uint32_t r = root[op->operands[j]];
            if (last_use[r] == NONE || last_use[r] < op_step[i]) last_use[r] = op_step[i];
            if (ir->origins[r] == UFORM__SESSION_ORIGIN_OPERATION && op_step[ir->definers[r]] != op_step[i]) outside[r] = 1;
        }
    }

    // 2. Homes.
    for (uint32_t v = 0; v < V; ++v) {
        uform__session_storage_t *home = &plan->storage[v];
        if (ir->origins[v] == UFORM__SESSION_ORIGIN_PARAMETER) {
            home->home = UFORM__SESSION_HOME_INPUT;
            home->index = ir->definers[v];
        } else if (ir->origins[v] == UFORM__SESSION_ORIGIN_CONSTANT) {
            home->home = UFORM__SESSION_HOME_CONSTANT;
            home->index = ir->definers[v];
        } else if (root[v] != v) {
            home->home = UFORM__SESSION_HOME_ALIAS;
            home->index = root[v];
        }
    }
    for (uint32_t i = 0; i < O; ++i) {
        uint32_t v = ir->operations[i].result;
        if (root[v] != v || hidden[v]) continue;
        uform__session_storage_t *home = &plan->storage[v];
        for (uint32_t k = 0; k < Q; ++k)
            if (!served[k] && root[ir->outputs[k].value] == v) {
                served[k] = 1;
                home->home = UFORM__SESSION_HOME_OUTPUT;
                home->index = k;
                break;
            }
        if (home->home != UFORM__SESSION_HOME_NONE) continue;
        int in_chain = plan->steps[op_step[i]].kind == UFORM__SESSION_STEP_FUSED && absorbed[i] == NONE;
        if (!in_chain || outside[v]) home->home = UFORM__SESSION_HOME_SCRATCH;
    }
    for (uint32_t k = 0; k < Q; ++k) {
        if (served[k]) continue;
        uform__session_step_t *step = &plan->steps[steps];
        step->kind = UFORM__SESSION_STEP_COPY;
        step->epilogue_bias = step->epilogue_result = NONE;
        step->source = ir->outputs[k].value;
        step->output = k;
        uint32_t r = root[step->source];
        if (last_use[r] == NONE || last_use[r] < steps) last_use[r] = steps;
        ++steps;
    }
    plan->step_count = steps;

    // 3. Liveness: first-fit offsets among the scratch values alive at once.
    size_t live_count = 0, high = 0;
    for (uint32_t i = 0; i < O; ++i) {
        uint32_t v = ir->operations[i].result;
        if (plan->storage[v].home != UFORM__SESSION_HOME_SCRATCH) continue;
        uint32_t def = op_step[i], end = last_use[v] == NONE || last_use[v] < def ? def : last_use[v];
        size_t kept = 0; // drop intervals whose last reader ran before this step
        for (size_t j = 0; j < live_count; ++j)
            if (live[j].end >= def) live[kept++] = live[j];
        live_count = kept;
        size_t size = ALIGN64(ir->types[v].bytes), offset = 0;
        for (;;) { // lowest offset that overlaps no live interval
            int moved = 0;
            for (size_t j = 0; j < live_count; ++j)
                if (offset < live[j].offset + live[j].size && live[j].offset < offset + size) {
                    offset = live[j].offset + live[j].size;
                    moved = 1;
                }
            if (!moved) break;
        }
        live[live_count].offset = offset;
        live[live_count].size = size;
        live[live_count].end = end;
        ++live_count;
        plan->storage[v].offset = offset;
        if (offset + size > high) high = offset + size;
        if ((uint64_t)high > UFORM_SESSION_BYTE_LIMIT) {
            status = uform__session_error(error, UFORM_SESSION_COMPILE_FAILED, "the scratch plan exceeds 2^40 bytes");
            goto done;
        }
    }
    plan->value_scratch = high;

    // Chains, then 4. the workspace.
    size_t workspace = 0;
    for (uint32_t s = 0; s < steps; ++s) {
        uform__session_step_t *step = &plan->steps[s];
        size_t need = 0;
        if (step->kind == UFORM__SESSION_STEP_FUSED) {
            if ((status = build_fused(plan, step, group_first[s], step->fused_count, register_of, error))) goto done;
            need = uform__session_fused_workspace(plan, step);
        } else if (step->kind == UFORM__SESSION_STEP_SINGLE) {
            need = uform__session_single_workspace(plan, &ir->operations[step->operation]);
        }
        if (need > workspace) workspace = need;
    }
    plan->workspace_offset = ALIGN64(high);
    plan->workspace_size = ALIGN64(workspace);
    plan->scratch_size = plan->workspace_offset + plan->workspace_size + 64u;
    if ((uint64_t)plan->scratch_size > UFORM_SESSION_BYTE_LIMIT) {
        status = uform__session_error(error, UFORM_SESSION_COMPILE_FAILED, "the scratch plan needs %zu bytes, above 2^40",
                                      plan->scratch_size);
        goto done;
    }

    for (uint32_t i = 0; i < P; ++i) describe(&ir->types[ir->parameters[i].value], &plan->input_descriptors[i]);
    for (uint32_t k = 0; k < Q; ++k) describe(&ir->types[ir->outputs[k].value], &plan->output_descriptors[k]);
    uform__session_kernels_bind(&plan->kernels, uform_cpu_class_detect(), 0);

done:
    free(root);
    free(op_step);
    free(last_use);
    free(outside);
    free(served);
    free(register_of);
    free(live);
    free(uses);
    free(consumer);
    free(absorbed);
    free(hidden);
    free(group_first);
    return status;
}

uform_session_status_t uform__session_plan(uform__session_ir_t *ir, uform__session_plan_t *plan,
                                           uform__session_error_t *error) {
    memset(plan, 0, sizeof *plan);
    plan->ir = *ir;
    memset(ir, 0, sizeof *ir);
    uform_session_status_t status = plan_program(plan, error);
    if (status != UFORM_SESSION_OK) uform__session_plan_free(plan);
    return status;
}

uform_session_status_t uform__session_run(uform__session_plan_t *plan, const void *const *inputs,
                                          void *const *outputs, unsigned char *scratch) {
    const uform__session_ir_t *ir = &plan->ir;
    for (uint32_t v = 0; v < ir->value_count; ++v) {
        const uform__session_storage_t *home = &plan->storage[v];
        void *address = NULL;
        switch (home->home) {
        case UFORM__SESSION_HOME_INPUT: address = (void *)inputs[home->index]; break; // read only, never written
        case UFORM__SESSION_HOME_OUTPUT: address = outputs[home->index]; break;
        case UFORM__SESSION_HOME_CONSTANT: address = ir->constants[home->index].payload; break;
        case UFORM__SESSION_HOME_SCRATCH: address = scratch + home->offset; break;
        default: break;
        }
        plan->addresses[v] = address;
    }
    for (uint32_t v = 0; v < ir->value_count; ++v)
        if (plan->storage[v].home == UFORM__SESSION_HOME_ALIAS) plan->addresses[v] = plan->addresses[plan->storage[v].index];
    unsigned char *workspace = scratch + plan->workspace_offset;
    for (uint32_t s = 0; s < plan->step_count; ++s) {
        const uform__session_step_t *step = &plan->steps[s];
        if (step->kind == UFORM__SESSION_STEP_FUSED) uform__session_fused_run(plan, step, workspace);
        else if (step->kind == UFORM__SESSION_STEP_SINGLE) {
            uform_session_status_t status = uform__session_single_run(plan, step, workspace);
            if (status != UFORM_SESSION_OK) return status;
        } else {
            memcpy(outputs[step->output], plan->addresses[step->source], ir->types[step->source].bytes);
        }
    }
    return UFORM_SESSION_OK;
}

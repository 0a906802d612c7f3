/*
 * uform index --vectors V.npy --out INDEX [--ids FILE | --paths FILE] [--model CKPT] [--normalize]
 *             [--modality M] [--scalar KIND] [--json] [--quiet]
 *
 * An index from embeddings made elsewhere (docs/indexes.md, "Indexes from vectors"): the rows of
 * a float32 or float16 .npy matrix become items, named by the lines of --ids (or --paths, the same
 * thing) or by their row numbers, stored through uform_index_builder_add_vectors and written
 * atomically. tools/index.c hands over here when --vectors is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "index_vectors.h"
#include "npy_read.h"

/* The lines of `path` as a tape over the file's bytes (each line without its '\n'; a last line
 * without one counts too). Answers 0, or the exit status after printing why. */
static int read_lines(const char *path, unsigned char **bytes, size_t **offsets, size_t *count) {
    size_t size = 0;
    *bytes = cli_read_file(path, &size);
    if (!*bytes) return 1;
    size_t lines = 0;
    for (size_t i = 0; i < size; ++i) lines += (*bytes)[i] == '\n';
    if (size && (*bytes)[size - 1] != '\n') lines += 1;
    /* The lines are moved down over the newlines in place, so the bytes become a tape: line k
     * is bytes offsets[k] .. offsets[k + 1]. */
    *offsets = malloc((lines + 1) * sizeof **offsets);
    if (!*offsets) return cli_fail_errno(ENOMEM, "cannot hold the lines of '%s'", path);
    size_t write = 0, line = 0;
    (*offsets)[0] = 0;
    for (size_t read = 0; read < size; ++read) {
        if ((*bytes)[read] == '\n') (*offsets)[++line] = write;
        else (*bytes)[write++] = (*bytes)[read];
    }
    if (line < lines) (*offsets)[++line] = write;
    *count = lines;
    return 0;
}

int index_vectors_run(const index_vectors_options_t *options, const cli_command_t *command) {
    const char *names_path = options->ids ? options->ids : options->paths;
    if (options->ids && options->paths) return cli_usage_error(command, "--ids and --paths name the same thing: give one");
    int modality = UFORM_MODALITY_IMAGE;
    if (options->modality) {
        modality = -1;
        for (int m = 0; m < 4; ++m)
            if (strcmp(options->modality, cli_modality_name((uform_modality_t)m)) == 0) modality = m;
        if (modality < 0) return cli_usage_error(command, "--modality '%s' is not one of text, image, video, audio", options->modality);
    }
    /* A member of a mesh meets the others first, so a member that never comes fails every one of
     * them within the mesh's timeout before any work is done. */
    train_mesh_t *mesh = options->mesh && train_mesh_wanted(options->mesh) ? options->mesh : NULL;
    uform_executor_t mesh_executor = NULL;
    if (mesh) {
        char agreement[256];
        snprintf(agreement, sizeof agreement, "index.scalar=%s\nindex.normalize=%d\nindex.modality=%d\n",
                 cli_scalar_name(options->scalar), options->normalize, modality);
        int joined = cli_executor(options->threads ? options->threads : 1, &mesh_executor);
        if (joined == 0) joined = train_mesh_join(mesh, mesh_executor, NULL, agreement, options->quiet);
        if (joined != 0) {
            uform_executor_free(mesh_executor);
            return joined;
        }
    }
    npy_matrix_t matrix = {0};
    char error[256];
    int status = 0;
    if (npy_matrix_open(options->vectors, &matrix, error, sizeof error) != 0) {
        fprintf(stderr, "uform: %s (%s)\n", error, options->vectors);
        status = 1;
    }
    double start = cli_now();
    unsigned char *names = NULL;
    size_t *offsets = NULL, name_count = 0;
    if (status == 0 && names_path && (status = read_lines(names_path, &names, &offsets, &name_count)) == 0 &&
        name_count != matrix.rows) {
        fprintf(stderr, "uform: %s has %zu lines for the %zu rows of %s: one identifier per row\n", names_path, name_count,
                matrix.rows, options->vectors);
        status = 1;
    }
    /* This member's share: the contiguous block [first, end) of the rows, so the blocks gathered in
     * member order are the rows in file order. */
    size_t first = 0, end = matrix.rows;
    if (mesh) first = matrix.rows * mesh->index / mesh->count, end = matrix.rows * (mesh->index + 1) / mesh->count;
    /* With --model, the vectors are that checkpoint's embeddings: its fingerprint is stamped, so
     * `uform search INDEX CKPT --text ...` works, and the width must be its E or a prefix of it. */
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    const char *stamp = NULL;
    uform_outcome_t outcome = {0};
    if (status == 0 && options->model) {
        uform_executor_t executor = NULL;
        uform_model_t model = NULL;
        status = cli_executor(1, &executor);
        if (status == 0 && !(model = cli_load(options->model, executor, cli_compute(-1)))) status = 1;
        if (status == 0) {
            uform_model_describe_t describe = {model};
            uform_model_describe(&describe);
            if (matrix.columns > describe.description.embedding) {
                fprintf(stderr, "uform: %s has %zu columns, wider than checkpoint %s's embeddings (%zu)\n", options->vectors,
                        matrix.columns, options->model, describe.description.embedding);
                status = 1;
            } else if (uform_model_fingerprint(model, fingerprint, &outcome) != UFORM_OK) {
                status = cli_fail(&outcome, options->model);
            } else {
                stamp = fingerprint;
            }
        }
        uform_model_free(model);
        uform_executor_free(executor);
    }
    /* Without --ids, a member names its rows by their numbers in the whole file (a lone builder would
     * number them from 0 itself). */
    char *numbers = NULL;
    size_t *number_offsets = NULL;
    uform_tape_t tape = {names, offsets ? offsets + first : NULL, end - first};
    if (status == 0 && mesh && !names_path) {
        numbers = malloc((end - first) * 21 + 1);
        number_offsets = malloc((end - first + 1) * sizeof *number_offsets);
        if (!numbers || !number_offsets) status = cli_fail_errno(ENOMEM, "cannot hold the names of %zu rows", end - first);
        size_t used = 0;
        for (size_t row = first; status == 0 && row < end; ++row) {
            number_offsets[row - first] = used;
            used += (size_t)sprintf(numbers + used, "%zu", row);
        }
        if (status == 0) number_offsets[end - first] = used;
        tape = (uform_tape_t){numbers, number_offsets, end - first};
    }
    size_t element = matrix.scalar == UFORM_SCALAR_F16 ? 2 : 4;
    uform_index_builder_t builder = NULL;
    if (status == 0 && uform_index_builder_create_vectors(matrix.columns, options->scalar, stamp, &builder, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, options->vectors);
    if (status == 0 &&
        uform_index_builder_add_vectors(builder, (uform_modality_t)modality,
                                        (const unsigned char *)matrix.data + first * matrix.columns * element, matrix.scalar,
                                        end - first, matrix.columns, 0, names_path || mesh ? &tape : NULL,
                                        options->normalize ? UFORM_INDEX_NORMALIZE : 0, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, options->vectors);
    free(numbers), free(number_offsets);
    /* Every member takes part in the write, also one that failed (with no builder), so the others
     * stop at once; member 0 alone writes, the others stream their rows to it. */
    int writes = !mesh || mesh->index == 0;
    if (mesh) {
        if (uform_index_builder_write_members(status == 0 ? builder : NULL, mesh->mesh, options->out, NULL, 0, &outcome) !=
                UFORM_OK &&
            status == 0)
            status = cli_fail(&outcome, writes ? options->out : NULL);
    } else if (status == 0 && uform_index_builder_write(builder, options->out, NULL, 0, &outcome) != UFORM_OK) {
        status = cli_fail(&outcome, options->out);
    }
    if (mesh && options->ann) {
        /* Every member adds its own block (its builder) to the structure; member 0 also needs the
         * whole index (the pairing record names its rows). A member that failed still takes part,
         * with no block. */
        uform_index_t whole = NULL;
        if (status == 0 && writes && uform_index_open(options->out, NULL, &whole, &outcome) != UFORM_OK)
            status = cli_fail(&outcome, options->out);
        if (uform_index_ann_build_members(whole, status == 0 ? builder : NULL, mesh->mesh, options->ann_path, options->ann,
                                          &outcome) != UFORM_OK &&
            status == 0)
            status = cli_fail(&outcome, NULL);
        uform_index_free(whole);
    }
    double seconds = cli_now() - start;
    if (status == 0 && writes && options->json) {
        printf("{\"indexed\": %zu, \"dims\": %zu, \"scalar\": \"%s\", \"modality\": \"%s\", \"normalized\": %s, "
               "\"fingerprint\": \"%s\", \"seconds\": %.3f, \"index\": ",
               matrix.rows, matrix.columns, cli_scalar_name(options->scalar), cli_modality_name((uform_modality_t)modality),
               options->normalize ? "true" : "false", stamp ? stamp : UFORM_INDEX_NO_CHECKPOINT, seconds);
        cli_json_string(stdout, options->out, strlen(options->out));
        printf("}\n");
    }
    if (status == 0 && writes && !options->quiet) {
        char count[32], duration[32];
        fprintf(stderr, "uform: %s vectors of %zu dims indexed as %s in %s\n", cli_thousands(matrix.rows, count, sizeof count),
                matrix.columns, cli_scalar_name(options->scalar), cli_duration(seconds, duration, sizeof duration));
    }
    uform_index_builder_free(builder);
    free(names), free(offsets);
    if (matrix.mapping) npy_matrix_close(&matrix);
    if (mesh) train_mesh_free(mesh);
    uform_executor_free(mesh_executor);
    return status;
}

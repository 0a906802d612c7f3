/*
 * The PyTorch reader's parts without PyTorch: archives and pickles built in C (torch_sample.h)
 * for what torch.save never writes but a reader meets — every opcode byte, the protocol 4
 * opcodes and the stack rules of CPython's _pickle.c, keys of every kind, nesting and copy
 * limits, and ZIP records broken one field at a time. Expected values come from the sample's
 * formulas (storage "0" holds 0, 1, ..., 23), never from the reader.
 */
#include "common/check.h"
#include "io/torch_file.h"
#include "io/zip.h"
#include "torch_sample.h"

/* Opens `bytes` from memory; answers the status and keeps the message. */
static uform_status_t open_bytes(const sample_bytes_t *bytes, uform__torch_file_t **file, char message[400]) {
    uform_outcome_t outcome = {0};
    /* An allocation of exactly the archive's size, so ASan sees any read past it. */
    uint8_t *exact = malloc(bytes->size ? bytes->size : 1);
    memcpy(exact, bytes->data, bytes->size);
    uform_status_t status = uform__torch_open_memory(exact, bytes->size, file, &outcome);
    snprintf(message, 400, "%s", outcome.message);
    if (status != UFORM_OK) free(exact);
    return status;
}

static void close_bytes(uform__torch_file_t *file) {
    if (!file) return;
    size_t size = 0;
    void *bytes = (void *)uform__torch_bytes(file, &size);
    uform__torch_close(file);
    free(bytes);
}

/* Wraps `pickle` in the sample archive and expects `status` with `text` in the message. */
static void expect_pickle(const char *label, const sample_bytes_t *pickle, uform_status_t status, const char *text) {
    sample_bytes_t archive = {0};
    sample_archive(&archive, pickle, (sample_zip_options_t){0});
    uform__torch_file_t *file = NULL;
    char message[400];
    uform_status_t got = open_bytes(&archive, &file, message);
    CHECK_MSG(got == status && strstr(message, text), "%s: status %s, expected %s; message \"%s\" should hold \"%s\"",
              label, uform_status_name(got), uform_status_name(status), message, text);
    close_bytes(file);
    free(archive.data);
}

static void expect_raw(const char *label, const char *pickle, size_t size, uform_status_t status, const char *text) {
    sample_bytes_t bytes = {0};
    sample_put(&bytes, pickle, size);
    expect_pickle(label, &bytes, status, text);
    free(bytes.data);
}
#define EXPECT_RAW(label, literal, status, text) expect_raw(label, literal, sizeof literal - 1, status, text)

/* The tensor is F32 and holds `expected` (the sample's storage "0" holds i at element i). */
static void expect_floats(const uform__safetensors_tensor_t *tensor, const char *name, const float *expected, size_t count) {
    CHECK_MSG(tensor != NULL, "'%s' is missing", name);
    if (!tensor) return;
    CHECK_EQ_INT(tensor->dtype, UFORM__SAFETENSORS_F32);
    CHECK_EQ_INT(tensor->element_count, count);
    CHECK_EQ_INT(tensor->length, count * 4);
    for (size_t index = 0; index < count && tensor->element_count == count; ++index) {
        float got;
        memcpy(&got, (const uint8_t *)tensor->data + 4 * index, 4);
        CHECK_MSG(got == expected[index], "'%s'[%zu] = %g, expected %g", name, index, got, expected[index]);
    }
}

/* The state sample under every archive layout. */
static void test_state_sample(void) {
    sample_zip_options_t layouts[] = {{0, 0, NULL}, {1, 0, NULL}, {0, 1, NULL}, {1, 0, "a comment"}, {0, 1, "x"}};
    for (size_t layout = 0; layout < sizeof layouts / sizeof layouts[0]; ++layout) {
        sample_bytes_t pickle = {0}, archive = {0};
        sample_state_pickle(&pickle);
        sample_archive(&archive, &pickle, layouts[layout]);
        uform__torch_file_t *file = NULL;
        char message[400];
        uform_status_t status = open_bytes(&archive, &file, message);
        CHECK_MSG(status == UFORM_OK, "layout %zu: %s", layout, message);
        CHECK_EQ_INT(uform__torch_count(file), 4);
        static const char *const names[] = {"nested.7.b", "nested.v", "t", "w"};
        for (size_t index = 0; index < 4 && uform__torch_count(file) == 4; ++index)
            CHECK_MSG(!strcmp(uform__torch_at(file, index)->name, names[index]), "name %zu is %s", index,
                      uform__torch_at(file, index)->name);
        static const float w[6] = {6, 7, 8, 9, 10, 11}, t[6] = {6, 9, 7, 10, 8, 11}, v[4] = {20, 21, 22, 23}, b[1] = {23};
        const uform__safetensors_tensor_t *tw = uform__torch_find(file, "w"), *tt = uform__torch_find(file, "t");
        expect_floats(tw, "w", w, 6);
        expect_floats(tt, "t", t, 6);
        expect_floats(uform__torch_find(file, "nested.v"), "nested.v", v, 4);
        expect_floats(uform__torch_find(file, "nested.7.b"), "nested.7.b", b, 1);
        if (tw && tt) {
            CHECK(uform__torch_mapped(file, tw) && !uform__torch_mapped(file, tt));
            CHECK_EQ_INT(tw->rank, 2);
            CHECK(tw->shape[0] == 2 && tw->shape[1] == 3 && tt->shape[0] == 3 && tt->shape[1] == 2);
            size_t size = 0;
            const uint8_t *bytes = uform__torch_bytes(file, &size);
            CHECK((const uint8_t *)tw->data == bytes + tw->offset && tw->offset % 4 == 0);
        }
        CHECK(uform__torch_find(file, "epoch") == NULL && uform__torch_find(file, "list") == NULL);
        CHECK(uform__torch_find(file, "nested") == NULL && uform__torch_find(file, NULL) == NULL);
        CHECK(uform__torch_at(file, 4) == NULL);
        close_bytes(file);
        free(pickle.data);
        free(archive.data);
    }
}

/* Every byte as the opcode after PROTO 2: never accepted alone, and the refused ones are named. */
static void test_every_opcode(void) {
    static const struct {
        uint8_t code;
        const char *name;
    } refused[] = {{'F', "FLOAT"}, {'I', "INT"}, {'L', "LONG"}, {'P', "PERSID"}, {'S', "STRING"}, {'V', "UNICODE"},
                   {'g', "GET"}, {'i', "INST"}, {'o', "OBJ"}, {'p', "PUT"}, {0x82, "EXT1"}, {0x83, "EXT2"},
                   {0x84, "EXT4"}, {0x8b, "LONG4"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"},
                   {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}, {0x00, "not an opcode"},
                   {0xff, "not an opcode"}};
    for (int code = 0; code < 256; ++code) {
        char pickle[3] = {(char)0x80, 2, (char)code}, label[32], text[64] = "";
        snprintf(label, sizeof label, "opcode 0x%02x", code);
        for (size_t index = 0; index < sizeof refused / sizeof refused[0]; ++index)
            if (refused[index].code == code) snprintf(text, sizeof text, "opcode 0x%02x (%s)", code, refused[index].name);
        expect_raw(label, pickle, 3, UFORM_FORMAT, text);
    }
}

/* Protocol 4 and the rarer opcodes, keys of every kind, the stack rules. */
static void test_opcodes(void) {
    sample_bytes_t body = {0}, pickle = {0};
    SAMPLE_LITERAL(&body, "}\x94(");
    SAMPLE_LITERAL(&body, "\x8c\x01" "a");
    pickle_vector(&body, "0", 24, 0, 1);
    SAMPLE_LITERAL(&body, "C\x01" "b"); /* bytes keys name tensors too */
    pickle_vector(&body, "0", 24, 1, 1);
    pickle_int(&body, -5);
    pickle_vector(&body, "0", 24, 2, 1);
    SAMPLE_LITERAL(&body, "\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09"); /* an int past 64 bits: skipped */
    pickle_vector(&body, "0", 24, 3, 1);
    SAMPLE_LITERAL(&body, "N"); /* None: skipped */
    pickle_vector(&body, "0", 24, 3, 1);
    SAMPLE_LITERAL(&body, "\x8d\x04\0\0\0\0\0\0\0long");
    pickle_vector(&body, "0", 24, 4, 1);
    SAMPLE_LITERAL(&body, "u");
    SAMPLE_LITERAL(&body, "\x8c\x05" "floatG\x3f\xf8\0\0\0\0\0\0s"); /* 1.5, big-endian */
    SAMPLE_LITERAL(&body, "\x8c\x03set\x8fs\x8c\x03tupK\x01K\x02\x86s\x8c\x04true\x88s\x8c\x02t1K\x01\x85s");
    SAMPLE_LITERAL(&body, "\x8c\x03popK\x07" "0");
    pickle_vector(&body, "0", 24, 5, 1);
    SAMPLE_LITERAL(&body, "s\x8c\x04mark(K\x01K\x02" "1");
    pickle_vector(&body, "0", 24, 6, 1);
    SAMPLE_LITERAL(&body, "s\x8c\x03" "dup2" "0");
    pickle_vector(&body, "0", 24, 7, 1);
    SAMPLE_LITERAL(&body, "\x94s\x8c\x04list]");
    pickle_vector(&body, "0", 24, 8, 1);
    SAMPLE_LITERAL(&body, "as\x8c\x04" "dict(\x8c\x01x");
    pickle_vector(&body, "0", 24, 9, 1);
    SAMPLE_LITERAL(&body, "ds\x8c\x05" "again\x68\x01s"); /* memo slot 1: the "dup" tensor */
    SAMPLE_LITERAL(&body, "\x8c\x02od\x8c\x0b" "collections\x8c\x0bOrderedDict\x93)\x81(\x8c\x01x");
    pickle_vector(&body, "0", 24, 10, 1);
    SAMPLE_LITERAL(&body, "us\x8c\x04size\x8c\x05torch\x8c\x04Size\x93K\x02K\x03\x86\x85Rs");
    SAMPLE_LITERAL(&body, "\x8c\x03" "dev\x8c\x05torch\x8c\x06" "device\x93\x8c\x04" "cudaK\x00\x86Rs");
    SAMPLE_LITERAL(&body, "\x8c\x02" "dt\x8c\x05torch\x8c\x08" "bfloat16\x93s");
    SAMPLE_LITERAL(&body, ".");
    SAMPLE_LITERAL(&pickle, "\x80\x04\x95");
    sample_le(&pickle, body.size, 8);
    sample_put(&pickle, body.data, body.size);
    sample_bytes_t archive = {0};
    sample_archive(&archive, &pickle, (sample_zip_options_t){0});
    uform__torch_file_t *file = NULL;
    char message[400];
    CHECK_MSG(open_bytes(&archive, &file, message) == UFORM_OK, "protocol 4 sample: %s", message);
    static const struct {
        const char *name;
        float value;
    } expected[] = {{"-5", 2}, {"a", 0}, {"again", 7}, {"b", 1}, {"dict.x", 9}, {"dup", 7},
                    {"long", 4}, {"mark", 6}, {"od.x", 10}, {"pop", 5}};
    size_t count = sizeof expected / sizeof expected[0];
    CHECK_EQ_INT(uform__torch_count(file), count);
    for (size_t index = 0; index < count && uform__torch_count(file) == count; ++index) {
        const uform__safetensors_tensor_t *tensor = uform__torch_at(file, index);
        CHECK_MSG(!strcmp(tensor->name, expected[index].name), "name %zu: %s, expected %s", index, tensor->name,
                  expected[index].name);
        expect_floats(tensor, expected[index].name, &expected[index].value, 1);
    }
    close_bytes(file);
    free(body.data);
    free(pickle.data);
    free(archive.data);

    /* _pickle.c's fence: POP at an empty mark pops the mark; STOP cannot pop below it. */
    EXPECT_RAW("pop a mark", "\x80\x02}(0.", UFORM_OK, "");
    EXPECT_RAW("stop at a fence", "\x80\x02}(.", UFORM_FORMAT, "STOP needs more items than the stack holds above its last MARK");
    EXPECT_RAW("tuple without mark", "\x80\x02K\x01t.", UFORM_FORMAT, "TUPLE closes a MARK, but none is open");
    EXPECT_RAW("setitem underflow", "\x80\x02}K\x01s.", UFORM_FORMAT, "SETITEM needs more items");
    EXPECT_RAW("append to dict", "\x80\x02}K\x01" "a.", UFORM_FORMAT, "adds to a dict, not a list");
    EXPECT_RAW("setitems odd", "\x80\x02}(K\x01u.", UFORM_FORMAT, "SETITEMS has 1 items after its MARK");
    EXPECT_RAW("dict odd", "\x80\x02(K\x01" "d.", UFORM_FORMAT, "DICT has 1 items");
    EXPECT_RAW("global without newline", "\x80\x02" "ctorch\nSize", UFORM_FORMAT, "GLOBAL's name does not end in a newline");
    EXPECT_RAW("stack global of ints", "\x80\x04K\x01K\x02\x93.", UFORM_FORMAT, "STACK_GLOBAL takes two strings");
    EXPECT_RAW("newobj of a function", "\x80\x02" "ctorch._utils\n_rebuild_tensor\n)\x81.", UFORM_FORMAT,
               "NEWOBJ makes an instance of torch._utils._rebuild_tensor");
    EXPECT_RAW("build on a list", "\x80\x02]}b.", UFORM_FORMAT, "BUILD sets state on a list");
    EXPECT_RAW("frame too long", "\x80\x04\x95\xff\0\0\0\0\0\0\0}.", UFORM_FORMAT, "FRAME of 255 bytes runs past");
    EXPECT_RAW("device of an int", "\x80\x02}(X\x01\0\0\0" "dctorch\ndevice\nK\x01\x85Ru.", UFORM_FORMAT,
               "torch.device takes a string");
    EXPECT_RAW("ordered dict of ints", "\x80\x02" "ccollections\nOrderedDict\n]K\x01" "a\x85R.", UFORM_FORMAT,
               "an item that is not a pair");
    EXPECT_RAW("size of strings", "\x80\x02" "ctorch\nSize\nX\x01\0\0\0x\x85\x85R.", UFORM_FORMAT,
               "torch.Size is called with a tuple holding a string");
    EXPECT_RAW("reduce with a list", "\x80\x02" "ctorch\nSize\n]R.", UFORM_FORMAT, "is called with a list, not an argument tuple");
    EXPECT_RAW("binstring negative", "\x80\x02T\xff\xff\xff\xff.", UFORM_FORMAT, "negative length");
    EXPECT_RAW("parameter of an int", "\x80\x02" "ctorch._utils\n_rebuild_parameter\nK\x01\x89N\x87R.", UFORM_FORMAT,
               "_rebuild_parameter wraps an int, not a tensor");
    EXPECT_RAW("storage of Size", "\x80\x02(X\x07\0\0\0storagectorch\nSize\nX\x01\0\0\0" "0X\x03\0\0\0" "cpuK\x01tQ.",
               UFORM_FORMAT, "storage type is torch.Size");
    EXPECT_RAW("key with NUL", "\x80\x02(X\x07\0\0\0storagectorch\nFloatStorage\nX\x01\0\0\0\0X\x03\0\0\0" "cpuK\x01tQ.",
               UFORM_FORMAT, "key is a string that is empty or holds NUL");
    EXPECT_RAW("empty archive pickle", "", UFORM_FORMAT, "ends without a STOP");
}

/* Tensors built wrongly, and the limits of names, nesting and copies. */
static void test_tensors(void) {
    static const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    sample_bytes_t pickle = {0};
    SAMPLE_LITERAL(&pickle, "\x80\x02}(X\x01\0\0\0x");
    pickle_tensor(&pickle, "FloatStorage", "0", 24, 0, nine, nine, 9);
    SAMPLE_LITERAL(&pickle, "u.");
    expect_pickle("rank 9", &pickle, UFORM_UNSUPPORTED, "size has 9 dimensions, at most 8 are supported");
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(");
    pickle_vector(&pickle, "0", 24, 0, 1); /* a tensor where a storage belongs */
    SAMPLE_LITERAL(&pickle, "K\x00(K\x01t(K\x01t\x89NtR.");
    expect_pickle("tensor of a tensor", &pickle, UFORM_FORMAT, "storage is a tensor, not a storage");
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\nFloatStorage\nX\x01\0\0\0"
                         "0X\x03\0\0\0" "cpuK\x18tQK\x00(K\x02K\x02t(K\x01t\x89NtR.");
    expect_pickle("size and stride differ", &pickle, UFORM_FORMAT, "size has 2 dimensions but its stride 1");
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(K\x01t" "R.");
    expect_pickle("one argument", &pickle, UFORM_FORMAT, "takes 6 to 7 arguments, the pickle passes 1");

    /* 64 nested dicts are read, 65 are not. */
    for (int depth = 64; depth <= 65; ++depth) {
        pickle.size = 0;
        SAMPLE_LITERAL(&pickle, "\x80\x02");
        for (int level = 0; level < depth; ++level) SAMPLE_LITERAL(&pickle, "}(X\x01\0\0\0k");
        pickle_vector(&pickle, "0", 24, 0, 1);
        for (int level = 0; level < depth; ++level) SAMPLE_LITERAL(&pickle, "u");
        SAMPLE_LITERAL(&pickle, ".");
        if (depth == 64) expect_pickle("64 levels", &pickle, UFORM_OK, "");
        else expect_pickle("65 levels", &pickle, UFORM_FORMAT, "dicts nest deeper than 64 levels");
    }
    /* Two ways to the same name. */
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02}(X\x03\0\0\0a.b");
    pickle_vector(&pickle, "0", 24, 0, 1);
    SAMPLE_LITERAL(&pickle, "X\x01\0\0\0" "a}(X\x01\0\0\0" "b");
    pickle_vector(&pickle, "0", 24, 1, 1);
    SAMPLE_LITERAL(&pickle, "uu.");
    expect_pickle("colliding names", &pickle, UFORM_FORMAT, "are both named 'a.b'");
    /* An expanded view of 2^28 floats: a 1 GiB copy, past the 64 MiB floor. */
    static const int64_t huge[2] = {1 << 14, 1 << 14}, zero[2] = {0, 0};
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02}(X\x01\0\0\0x");
    pickle_tensor(&pickle, "FloatStorage", "0", 24, 0, huge, zero, 2);
    SAMPLE_LITERAL(&pickle, "u.");
    expect_pickle("expanded copy", &pickle, UFORM_UNSUPPORTED, "limit on copies");
    /* A small expanded view is copied: 3 rows of elements 4, 5. */
    static const int64_t rows[2] = {3, 2}, broadcast[2] = {0, 1};
    pickle.size = 0;
    SAMPLE_LITERAL(&pickle, "\x80\x02}(X\x01\0\0\0x");
    pickle_tensor(&pickle, "FloatStorage", "0", 24, 4, rows, broadcast, 2);
    SAMPLE_LITERAL(&pickle, "u.");
    sample_bytes_t archive = {0};
    sample_archive(&archive, &pickle, (sample_zip_options_t){0});
    uform__torch_file_t *file = NULL;
    char message[400];
    CHECK_MSG(open_bytes(&archive, &file, message) == UFORM_OK, "expanded: %s", message);
    static const float expanded[6] = {4, 5, 4, 5, 4, 5};
    expect_floats(uform__torch_find(file, "x"), "x", expanded, 6);
    close_bytes(file);
    free(archive.data);
    free(pickle.data);
}

/* The offset of the last occurrence of a 4-byte signature, or SIZE_MAX. */
static size_t find_last(const sample_bytes_t *bytes, uint32_t signature) {
    for (size_t at = bytes->size - 4 + 1; at-- > 0;) {
        uint32_t value = (uint32_t)bytes->data[at] | (uint32_t)bytes->data[at + 1] << 8 | (uint32_t)bytes->data[at + 2] << 16 |
                         (uint32_t)bytes->data[at + 3] << 24;
        if (value == signature) return at;
    }
    return SIZE_MAX;
}

static size_t find_first(const sample_bytes_t *bytes, uint32_t signature) {
    for (size_t at = 0; at + 4 <= bytes->size; ++at) {
        uint32_t value = (uint32_t)bytes->data[at] | (uint32_t)bytes->data[at + 1] << 8 | (uint32_t)bytes->data[at + 2] << 16 |
                         (uint32_t)bytes->data[at + 3] << 24;
        if (value == signature) return at;
    }
    return SIZE_MAX;
}

static void poke(sample_bytes_t *bytes, size_t at, uint64_t value, int width) {
    for (int index = 0; index < width; ++index) bytes->data[at + (size_t)index] = (uint8_t)(value >> (8 * index));
}

typedef void (*patch_fn)(sample_bytes_t *archive);

/* Archives broken one field at a time: each refused with its message. */
static void expect_patched(const char *label, int zip64_fields, patch_fn patch, uform_status_t status, const char *text) {
    sample_bytes_t pickle = {0}, archive = {0};
    sample_state_pickle(&pickle);
    sample_archive(&archive, &pickle, (sample_zip_options_t){zip64_fields, 0, NULL});
    patch(&archive);
    uform__torch_file_t *file = NULL;
    char message[400];
    uform_status_t got = open_bytes(&archive, &file, message);
    CHECK_MSG(got == status && strstr(message, text), "%s: status %s, expected %s; message \"%s\" should hold \"%s\"",
              label, uform_status_name(got), uform_status_name(status), message, text);
    close_bytes(file);
    free(pickle.data);
    free(archive.data);
}

static void central_signature(sample_bytes_t *a) { a->data[find_first(a, 0x02014b50) + 1] ^= 0x40; }
static void too_many_entries(sample_bytes_t *a) {
    poke(a, find_last(a, 0x06064b50) + 24, 9999, 8);
    poke(a, find_last(a, 0x06064b50) + 32, 9999, 8);
}
static void locator_off(sample_bytes_t *a) { poke(a, find_last(a, 0x07064b50) + 8, 3, 8); }
static void several_disks(sample_bytes_t *a) { poke(a, find_last(a, 0x06064b50) + 16, 1, 4); }
static void local_name(sample_bytes_t *a) { a->data[30 + 3] ^= 1; }
static void local_method(sample_bytes_t *a) { poke(a, 8, 8, 2); }
static void local_offset(sample_bytes_t *a) { poke(a, find_first(a, 0x02014b50) + 42, 1, 4); }
static void stored_size(sample_bytes_t *a) { poke(a, find_first(a, 0x02014b50) + 20, 5, 4); }
static void into_directory(sample_bytes_t *a) {
    size_t central = find_first(a, 0x02014b50);
    poke(a, central + 20, 1 << 20, 4);
    poke(a, central + 24, 1 << 20, 4);
}
static void name_nul(sample_bytes_t *a) { a->data[find_first(a, 0x02014b50) + 46 + 2] = 0; }
static void no_zip64_extra(sample_bytes_t *a) { poke(a, find_first(a, 0x02014b50) + 46 + strlen("archive/data.pkl"), 2, 2); }
static void extra_overrun(sample_bytes_t *a) { poke(a, find_first(a, 0x02014b50) + 46 + strlen("archive/data.pkl") + 2, 200, 2); }
static void comment_length(sample_bytes_t *a) { poke(a, a->size - 2, 1, 2); }
static void pickle_crc(sample_bytes_t *a) { poke(a, find_first(a, 0x02014b50) + 16, 0x12345678, 4); }
static void overlap(sample_bytes_t *a) {
    /* data.pkl's sizes grow to cover the next entry's local header. */
    size_t central = find_first(a, 0x02014b50), second = find_first(a, 0x02014b50) + 46 + strlen("archive/data.pkl");
    uint32_t next_local = (uint32_t)a->data[second + 42] | (uint32_t)a->data[second + 43] << 8 |
                          (uint32_t)a->data[second + 44] << 16 | (uint32_t)a->data[second + 45] << 24;
    uint32_t data_start = 30 + 16 + (uint32_t)(a->data[28] | a->data[29] << 8);
    poke(a, central + 20, next_local + 40 - data_start, 4);
    poke(a, central + 24, next_local + 40 - data_start, 4);
}

static void test_zip(void) {
    expect_patched("central signature", 0, central_signature, UFORM_FORMAT, "holds signature 0x02010b50");
    expect_patched("too many entries", 0, too_many_entries, UFORM_FORMAT, "counts 9999 entries, more than");
    expect_patched("locator", 0, locator_off, UFORM_FORMAT, "holds no zip64 end record");
    expect_patched("disks", 0, several_disks, UFORM_UNSUPPORTED, "spans several disks");
    expect_patched("local name", 0, local_name, UFORM_FORMAT, "spells another name");
    expect_patched("local method", 0, local_method, UFORM_FORMAT, "says method 8, the central directory 0");
    expect_patched("local offset", 0, local_offset, UFORM_FORMAT, "byte 1 holds no local header");
    expect_patched("stored size", 0, stored_size, UFORM_FORMAT, "differs from its stored size 5");
    expect_patched("into the directory", 0, into_directory, UFORM_FORMAT, "run into the central directory");
    expect_patched("NUL in a name", 0, name_nul, UFORM_FORMAT, "its name holds a NUL byte at name byte 2");
    expect_patched("no zip64 extra", 1, no_zip64_extra, UFORM_FORMAT, "has no zip64 extra field");
    expect_patched("extra overrun", 1, extra_overrun, UFORM_FORMAT, "claims 200 bytes");
    expect_patched("comment length", 0, comment_length, UFORM_FORMAT, "no end-of-central-directory record");
    expect_patched("CRC", 0, pickle_crc, UFORM_FORMAT, "fails its CRC-32 check (0x12345678 recorded");
    expect_patched("overlap", 0, overlap, UFORM_FORMAT, "overlap");

    /* An empty archive, the zip reader's own answers, and the CRC of a known text. */
    sample_bytes_t empty = {0};
    sample_zip(&empty, NULL, 0, (sample_zip_options_t){0});
    uform__torch_file_t *file = NULL;
    char message[400];
    CHECK_STATUS(open_bytes(&empty, &file, message), UFORM_FORMAT);
    CHECK_CONTAINS(message, "holds no entries");
    uform__zip_t *zip = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__zip_open(empty.data, empty.size, &zip, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform__zip_count(zip), 0);
    CHECK(uform__zip_at(zip, 0) == NULL && uform__zip_find(zip, "x") == NULL);
    uform__zip_close(zip);
    free(empty.data);
    CHECK_STATUS(uform__zip_open(NULL, 5, &zip, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__zip_open(NULL, 0, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_EQ_INT(uform__zip_crc32(0, "123456789", 9), 0xCBF43926u); /* the CRC-32 check value */
    CHECK_EQ_INT(uform__zip_crc32(uform__zip_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    CHECK_STATUS(uform__torch_open_memory(NULL, 0, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__torch_open(NULL, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__torch_open("/nonexistent/uform/model.bin", &file, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "No such file or directory");
    CHECK_STATUS(uform__torch_open("/tmp", &file, &outcome), UFORM_IO);
    uform__torch_close(NULL);
    CHECK(uform__torch_count(NULL) == 0 && uform__torch_at(NULL, 0) == NULL && uform__torch_find(NULL, "x") == NULL);
}

/* The legacy format: values, key orders, and every prefix refused. */
static void test_legacy(void) {
    static const char *const reordered[] = {"k2", "k1", "k3"}, *const missing[] = {"k1", "k2"},
                             *const extra[] = {"k1", "k2", "k3", "k4"}, *const twice[] = {"k1", "k1", "k2", "k3"};
    for (int variant = 0; variant < 2; ++variant) {
        sample_bytes_t bytes = {0};
        sample_legacy(&bytes, variant ? reordered : NULL, 3);
        uform__torch_file_t *file = NULL;
        char message[400];
        CHECK_MSG(open_bytes(&bytes, &file, message) == UFORM_OK, "legacy %d: %s", variant, message);
        CHECK_EQ_INT(uform__torch_count(file), 3);
        static const float w[6] = {2, 3, 4, 5, 6, 7}, x[3] = {14, 15, 16};
        expect_floats(uform__torch_find(file, "w"), "w", w, 6);
        expect_floats(uform__torch_find(file, "v.x"), "v.x", x, 3);
        const uform__safetensors_tensor_t *b = uform__torch_find(file, "b");
        CHECK(b && b->dtype == UFORM__SAFETENSORS_U8 && b->length == 2 && ((const uint8_t *)b->data)[0] == 7 &&
              ((const uint8_t *)b->data)[1] == 9);
        CHECK(b && uform__torch_mapped(file, b));
        close_bytes(file);
        if (!variant) { /* every prefix of the file is malformed */
            size_t refused = 0;
            for (size_t cut = 0; cut < bytes.size; ++cut) {
                sample_bytes_t prefix = {bytes.data, cut, cut};
                uform_status_t status = open_bytes(&prefix, &file, message);
                refused += status == UFORM_FORMAT && message[0];
                if (status == UFORM_OK) close_bytes(file);
            }
            CHECK_EQ_INT(refused, bytes.size);
        }
        free(bytes.data);
    }
    static const struct {
        const char *const *keys;
        int count;
        const char *text;
    } broken[] = {{missing, 2, "storage 'k3' is not in the key list"},
                  {extra, 4, "storage 'k4' of the key list is named by no persistent id"},
                  {twice, 4, "storage 'k1' appears twice in the key list"}};
    for (size_t index = 0; index < sizeof broken / sizeof broken[0]; ++index) {
        sample_bytes_t bytes = {0};
        sample_legacy(&bytes, broken[index].keys, broken[index].count);
        uform__torch_file_t *file = NULL;
        char message[400];
        uform_status_t status = open_bytes(&bytes, &file, message);
        CHECK_MSG(status == UFORM_FORMAT && strstr(message, broken[index].text), "legacy keys %zu: %s: %s", index,
                  uform_status_name(status), message);
        close_bytes(file);
        free(bytes.data);
    }
}

int main(void) {
    test_state_sample();
    test_every_opcode();
    test_opcodes();
    test_tensors();
    test_zip();
    test_legacy();
    return check_finish();
}

/*
 * tokenize_dump TOKENIZER_JSON STRINGS [MAX_LENGTH]: reads a tokenizer.json and a file of strings,
 * one per line, each written as JSON string text (so control characters, newlines and lone bytes
 * travel safely: "\u0000", "\n"; a line may also be "!hex:<bytes in hex>" for input that is not
 * valid UTF-8), and prints one line per string: the ids separated by spaces. Used by the
 * comparisons with transformers.js and the Rust `tokenizers` (tests/text/compare_tokenizers.mjs).
 * Exit status 0, or 1 with the failure on stderr.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"

static char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    size_t capacity = 1 << 16, length = 0;
    char *data = malloc(capacity);
    for (size_t got; data && (got = fread(data + length, 1, capacity - length, file)) > 0;) {
        length += got;
        if (length == capacity) data = realloc(data, capacity *= 2);
    }
    fclose(file);
    if (data) data[length < capacity ? length : capacity - 1] = 0, *size = length;
    return data;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER_JSON STRINGS [MAX_LENGTH]\n", argv[0]);
        return 1;
    }
    size_t max_length = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 0;
    size_t json_size = 0, strings_size = 0;
    char *json = read_file(argv[1], &json_size), *strings = read_file(argv[2], &strings_size);
    if (!json || !strings) {
        fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
        return 1;
    }
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    if (uform__tokenizer_from_json(json, json_size, &tokenizer, &outcome) != UFORM_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], outcome.message);
        return 1;
    }
    uform__text_ids_t ids = {0};
    char *line = strings, *buffer = malloc(strings_size + 1);
    int status = 0;
    while (line && *line) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t length = 0;
        if (strncmp(line, "!hex:", 5) == 0) {
            for (const char *at = line + 5; at[0] && at[1]; at += 2)
                buffer[length++] = (char)(hex_value(at[0]) * 16 + hex_value(at[1]));
        } else {
            cJSON *string = cJSON_Parse(line);
            if (!cJSON_IsString(string)) {
                fprintf(stderr, "not a JSON string: %.80s\n", line);
                return 1;
            }
            /* cJSON stops at an escaped NUL, so the test strings avoid \u0000 (the hex form carries it). */
            length = strlen(string->valuestring);
            memcpy(buffer, string->valuestring, length);
            cJSON_Delete(string);
        }
        if (uform__tokenizer_encode(tokenizer, buffer, length, max_length, &ids, &outcome) != UFORM_OK) {
            printf("error %d %s\n", (int)outcome.status, outcome.message);
            status = 1;
        } else {
            for (size_t i = 0; i < ids.count; ++i) printf(i ? " %u" : "%u", ids.data[i]);
            printf("\n");
        }
        line = next;
    }
    uform__text_ids_free(&ids);
    uform__tokenizer_free(tokenizer);
    free(buffer);
    free(json);
    free(strings);
    return status;
}

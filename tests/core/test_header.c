/* The public header compiles as strict C11 on its own (this file), and as C++ (test_header.cpp). */
#include <uform/uform.h>
#include <stdio.h>

int main(void) {
    uform_outcome_t outcome = {0};
    uform_tape_t tape = {0};
    uform_matrix_t matrix = {0};
    uform_progress_t progress = {0};
    (void)tape, (void)matrix, (void)progress;
    int ok = uform_outcome_status(&outcome) == UFORM_OK && sizeof(uform_outcome_t) >= UFORM_OUTCOME_MESSAGE_CAPACITY;
    printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}

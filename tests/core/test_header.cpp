// The public header compiles as C++ and links against the C library.
#include <uform/uform.h>

#include <cstdio>
#include <cstring>

int main() {
    uform_outcome_t outcome = {};
    uform_ram_options_t options = {};
    (void)options;
    int ok = std::strcmp(uform_status_name(UFORM_CONTENDED), "contended") == 0 && uform_outcome_status(&outcome) == UFORM_OK;
    std::printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}

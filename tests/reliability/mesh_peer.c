/*
 * Member 1 of the sweep's two-member bootstrap rows (rows_mesh.c): joins DIR/JOB (or JOB at a
 * tcp:// rendezvous) with the same options as member 0, then leaves. Exit status 0 when it joined.
 * Usage: reliability_mesh_peer DIR|tcp://HOST:PORT JOB
 */
#include <stdio.h>
#include <string.h>

#include "uform/uform.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reliability_mesh_peer DIR|tcp://HOST:PORT JOB\n");
        return 2;
    }
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_index = 1, options.host_domain_count = 2;
    if (strncmp(argv[1], "tcp://", 6) == 0) options.rendezvous = argv[1];
    else options.directory = argv[1];
    options.job = argv[2];
    options.timeout_seconds = 5, options.address = "127.0.0.1";
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    uform_mesh_free(mesh);
    return status == UFORM_OK ? 0 : 1;
}

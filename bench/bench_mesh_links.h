/* bench_mesh's other modes (bench_mesh_links.c, bench_mesh_memory.c), called from its main. */
#ifndef UFORM_BENCH_MESH_LINKS_H
#define UFORM_BENCH_MESH_LINKS_H

#include <cjson/cJSON.h>

/* bench_mesh --links ...: the all-reduce and steps on shaped links, the measured link model and the
 * scaling table. Answers the exit status. */
int bench_mesh_links(int argc, char **argv);

/* The scaling table of small and base from a link model: β as a share of the link rate, α seconds a
 * ring hop. Printed as markdown, and added to `root` as "scaling". */
void bench_mesh_scaling(double share, double hop, cJSON *root);

/* bench_mesh --accumulate ...: peak RSS of a large global batch on 2 members, per chunk count. */
int bench_mesh_accumulate(int argc, char **argv);

#endif

/*
 * What a process has mapped, from /proc/self/maps: for the on-demand tests (FFmpeg, the collectives
 * module), which must see a library absent until the call that needs it. Header-only.
 */
#ifndef UFORM_TESTS_RELIABILITY_MAPPED_H
#define UFORM_TESTS_RELIABILITY_MAPPED_H

#include <stdio.h>
#include <string.h>

/* How many distinct mapped shared objects contain `needle` in their path ("libavcodec", "libgloo");
 * also prints the number of distinct shared objects when `report` is set. -1 when the maps cannot
 * be read. */
static inline int mapped(const char *needle, int report) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return -1;
    char line[1024], seen[256][256];
    int found = 0, objects = 0;
    while (fgets(line, sizeof line, maps)) {
        const char *path = strchr(line, '/');
        if (!path) continue;
        char name[256];
        snprintf(name, sizeof name, "%s", path);
        name[strcspn(name, "\n")] = 0;
        if (!strstr(name, ".so")) continue;
        int known = 0;
        for (int i = 0; i < objects && !known; ++i) known = !strcmp(seen[i], name);
        if (known) continue;
        if (objects < 256) snprintf(seen[objects++], sizeof seen[0], "%s", name);
        if (strstr(name, needle)) ++found;
    }
    fclose(maps);
    if (report) printf("%d shared objects mapped\n", objects);
    return found;
}

#endif

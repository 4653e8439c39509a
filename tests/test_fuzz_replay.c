/*
 * test_fuzz_replay.c -- runs every file under the directories given on the
 * command line (fuzz/corpus and fuzz/regressions) through the fuzz target's
 * entry point, built here without libFuzzer. The target aborts on any broken
 * invariant; under the sanitizer builds this also replays the corpus with
 * AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer watching.
 * Each input that once crashed the fuzzer is kept in fuzz/regressions.
 */
#define _DEFAULT_SOURCE /* DT_DIR */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 65536 > cap) {
            cap = n + 65536;
            buf = realloc(buf, cap);
        }
        got = fread(buf + n, 1, 65536, f);
        n += got;
    } while (got > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            fprintf(stderr, "cannot open the directory %s\n", argv[i]);
            return 1;
        }
        char **names = NULL;
        size_t count = 0;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            names = realloc(names, (count + 1) * sizeof *names);
            names[count++] = strdup(e->d_name);
        }
        closedir(dir);
        if (count)
            qsort(names, count, sizeof *names, compare_names); /* a fixed order */
        for (size_t k = 0; k < count; k++) {
            char path[4096];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                fprintf(stderr, "%s\n", path); /* the input to blame if it aborts */
                errors += run_file(path);
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs\n", files);
    return errors ? 1 : 0;
}

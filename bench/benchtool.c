/*
 * benchtool: the C side of `make bench`. It generates the data sets and is the reference for reads:
 * the fastest plain C loops over mmap and pread, against which `ba-sync bench` is compared.
 *
 *   benchtool random DIR COUNT BYTES             COUNT incompressible files of BYTES each
 *   benchtool many DIR COUNT MIN MAX SEED        COUNT files of MIN..MAX bytes, every other one text
 *   benchtool mixed DIR BIG_COUNT BIG_MIN BIG_MAX SMALL_COUNT SEED
 *                                                a few big binaries and many small JSON/text files
 *   benchtool mmap SECONDS FILE...               whole-file mmap + sum of 64-bit words, warm
 *   benchtool pread SECONDS BLOCK THREADS FILE...
 *                                                random aligned BLOCK preads, warm
 *
 * Reads print one JSON line: {"operations":N,"bytes":N,"seconds":S}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
    fprintf(stderr, "benchtool: %s %s: %s\n", what, path ? path : "", strerror(errno));
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void mkdirs(const char *path) {
    char buffer[4096];
    snprintf(buffer, sizeof buffer, "%s", path);
    for (char *p = buffer + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buffer, 0755) != 0 && errno != EEXIST) die("mkdir", buffer);
            *p = '/';
        }
    }
    if (mkdir(buffer, 0755) != 0 && errno != EEXIST) die("mkdir", buffer);
}

static void write_file(const char *path, const unsigned char *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("create", path);
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n < 0) die("write", path);
        done += (size_t)n;
    }
    if (close(fd) != 0) die("close", path);
}

static void fill_random(unsigned char *buffer, size_t size, uint64_t *state) {
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t v = splitmix(state);
        memcpy(buffer + i, &v, 8);
    }
    for (; i < size; i++) buffer[i] = (unsigned char)splitmix(state);
}

static const char *words[] = {"level", "texture", "player", "score", "enemy", "spawn", "asset", "pack",
                              "world", "quest", "sound", "light", "shadow", "mesh", "vertex", "index",
                              "the", "of", "and", "a", "to", "in", "is", "it"};

/* Text that compresses about 3-4x with zstd, like prose or JSON. */
static void fill_text(unsigned char *buffer, size_t size, uint64_t *state, int json) {
    size_t i = 0;
    unsigned line = 0;
    while (i < size) {
        char chunk[128];
        int n;
        uint64_t r = splitmix(state);
        if (json)
            n = snprintf(chunk, sizeof chunk, "{\"id\": %u, \"%s\": \"%s-%u\", \"value\": %u},\n", line++,
                         words[r % 24], words[(r >> 8) % 24], (unsigned)(r >> 16) % 1000,
                         (unsigned)(r >> 32) % 100000);
        else
            n = snprintf(chunk, sizeof chunk, "%s %s ", words[r % 24], words[(r >> 8) % 24]);
        for (int k = 0; k < n && i < size; k++) buffer[i++] = (unsigned char)chunk[k];
    }
}

/* A file of `size` incompressible bytes, written through `buffer` (`chunk` bytes). */
static void write_random_file(const char *path, size_t size, unsigned char *buffer, size_t chunk, uint64_t *state) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("create", path);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < chunk ? size - done : chunk;
        fill_random(buffer, n, state);
        if (write(fd, buffer, n) != (ssize_t)n) die("write", path);
        done += n;
    }
    if (close(fd) != 0) die("close", path);
}

static int gen_random(char **argv) {
    const char *dir = argv[0];
    long count = atol(argv[1]);
    size_t bytes = (size_t)atoll(argv[2]);
    mkdirs(dir);
    size_t chunk = 1 << 20;
    unsigned char *buffer = malloc(chunk);
    uint64_t state = 42;
    char path[4096];
    for (long f = 0; f < count; f++) {
        snprintf(path, sizeof path, "%s/file-%04ld.bin", dir, f);
        write_random_file(path, bytes, buffer, chunk, &state);
    }
    free(buffer);
    return 0;
}

static int gen_many(char **argv) {
    const char *dir = argv[0];
    long count = atol(argv[1]);
    size_t min = (size_t)atoll(argv[2]), max = (size_t)atoll(argv[3]);
    uint64_t state = (uint64_t)atoll(argv[4]);
    unsigned char *buffer = malloc(max);
    char path[4096];
    for (long f = 0; f < count; f++) {
        if (f % 100 == 0) {
            snprintf(path, sizeof path, "%s/d%04ld", dir, f / 100);
            mkdirs(path);
        }
        size_t size = min + splitmix(&state) % (max - min + 1);
        if (f % 2) fill_text(buffer, size, &state, 0); else fill_random(buffer, size, &state);
        snprintf(path, sizeof path, "%s/d%04ld/f%06ld.%s", dir, f / 100, f, f % 2 ? "txt" : "bin");
        write_file(path, buffer, size);
    }
    free(buffer);
    return 0;
}

static int gen_mixed(char **argv) {
    const char *dir = argv[0];
    long big = atol(argv[1]);
    size_t big_min = (size_t)atoll(argv[2]), big_max = (size_t)atoll(argv[3]);
    long small = atol(argv[4]);
    uint64_t state = (uint64_t)atoll(argv[5]);
    char path[4096];
    snprintf(path, sizeof path, "%s/Binaries", dir);
    mkdirs(path);
    size_t chunk = 1 << 20;
    unsigned char *buffer = malloc(chunk);
    for (long f = 0; f < big; f++) {
        size_t size = big == 1 ? big_min : big_min + (big_max - big_min) * (size_t)f / (size_t)(big - 1);
        snprintf(path, sizeof path, "%s/Binaries/blob-%02ld.bin", dir, f);
        write_random_file(path, size, buffer, chunk, &state);
    }
    for (long f = 0; f < small; f++) {
        if (f % 200 == 0) {
            snprintf(path, sizeof path, "%s/Data/level%03ld", dir, f / 200);
            mkdirs(path);
        }
        size_t size = 200 + splitmix(&state) % (16 * 1024);
        fill_text(buffer, size, &state, f % 3 != 0);
        snprintf(path, sizeof path, "%s/Data/level%03ld/item%05ld.%s", dir, f / 200, f, f % 3 ? "json" : "txt");
        write_file(path, buffer, size);
    }
    free(buffer);
    return 0;
}

/* Reads every file once so that the timed loop starts warm. */
static void warm(int count, char **files) {
    static unsigned char buffer[1 << 20];
    for (int i = 0; i < count; i++) {
        int fd = open(files[i], O_RDONLY);
        if (fd < 0) die("open", files[i]);
        while (read(fd, buffer, sizeof buffer) > 0) {}
        close(fd);
    }
}

static volatile uint64_t sink;

static int read_mmap(double seconds, int count, char **files) {
    warm(count, files);
    long operations = 0;
    uint64_t bytes = 0, sum = 0;
    double start = now(), deadline = start + seconds;
    do {
        for (int i = 0; i < count; i++) {
            int fd = open(files[i], O_RDONLY);
            if (fd < 0) die("open", files[i]);
            struct stat st;
            if (fstat(fd, &st) != 0) die("stat", files[i]);
            size_t size = (size_t)st.st_size;
            if (size > 0) {
                const uint64_t *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
                if (p == MAP_FAILED) die("mmap", files[i]);
                size_t words = size / 8;
                for (size_t w = 0; w < words; w++) sum += p[w];
                for (size_t b = words * 8; b < size; b++) sum += ((const unsigned char *)p)[b];
                munmap((void *)p, size);
            }
            close(fd);
            operations++;
            bytes += size;
        }
    } while (now() < deadline);
    double elapsed = now() - start;
    sink = sum;
    printf("{\"operations\":%ld,\"bytes\":%llu,\"seconds\":%.6f}\n", operations, (unsigned long long)bytes, elapsed);
    return 0;
}

struct pread_job {
    int count;
    int *fds;
    uint64_t *block_ends;
    size_t block;
    double deadline;
    uint64_t seed;
    long operations;
};

static void *pread_worker(void *arg) {
    struct pread_job *job = arg;
    unsigned char *buffer = aligned_alloc(4096, job->block < 4096 ? 4096 : (job->block + 4095) / 4096 * 4096);
    uint64_t total = job->block_ends[job->count - 1], state = job->seed;
    long operations = 0;
    for (;;) {
        for (int k = 0; k < 256; k++) {
            uint64_t pick = splitmix(&state) % total;
            int low = 0, high = job->count - 1;
            while (low < high) {
                int middle = (low + high) / 2;
                if (job->block_ends[middle] > pick) high = middle; else low = middle + 1;
            }
            uint64_t first = low == 0 ? 0 : job->block_ends[low - 1];
            if (pread(job->fds[low], buffer, job->block, (off_t)((pick - first) * job->block)) < 0) die("pread", NULL);
            operations++;
        }
        if (now() >= job->deadline) break;
    }
    job->operations = operations;
    free(buffer);
    return NULL;
}

static int read_pread(double seconds, size_t block, int threads, int count, char **files) {
    warm(count, files);
    int *fds = calloc((size_t)count, sizeof *fds);
    uint64_t *ends = calloc((size_t)count, sizeof *ends), total = 0;
    int used = 0;
    for (int i = 0; i < count; i++) {
        int fd = open(files[i], O_RDONLY);
        if (fd < 0) die("open", files[i]);
        struct stat st;
        if (fstat(fd, &st) != 0) die("stat", files[i]);
        if ((size_t)st.st_size < block) { close(fd); continue; }
        total += (uint64_t)st.st_size / block;
        fds[used] = fd;
        ends[used++] = total;
    }
    if (used == 0) { fprintf(stderr, "benchtool: no file is a block long\n"); return 1; }
    pthread_t ids[64];
    struct pread_job jobs[64];
    if (threads > 64) threads = 64;
    double start = now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct pread_job){used, fds, ends, block, start + seconds, 1 + (uint64_t)t * 0x9E3779B9u, 0};
        pthread_create(&ids[t], NULL, pread_worker, &jobs[t]);
    }
    long operations = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        operations += jobs[t].operations;
    }
    double elapsed = now() - start;
    printf("{\"operations\":%ld,\"bytes\":%llu,\"seconds\":%.6f}\n", operations,
           (unsigned long long)operations * block, elapsed);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && strcmp(argv[1], "random") == 0) return gen_random(argv + 2);
    if (argc >= 7 && strcmp(argv[1], "many") == 0) return gen_many(argv + 2);
    if (argc >= 8 && strcmp(argv[1], "mixed") == 0) return gen_mixed(argv + 2);
    if (argc >= 4 && strcmp(argv[1], "mmap") == 0) return read_mmap(atof(argv[2]), argc - 3, argv + 3);
    if (argc >= 6 && strcmp(argv[1], "pread") == 0)
        return read_pread(atof(argv[2]), (size_t)atoll(argv[3]), atoi(argv[4]), argc - 5, argv + 5);
    fprintf(stderr, "usage: see the comment at the top of bench/benchtool.c\n");
    return 64;
}

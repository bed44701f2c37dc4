/* What attaching a seccomp filter costs on this kernel, by filter count and
 * length (docs/performance.md). Each sample is a fresh child: it sets
 * no_new_privs, attaches NF copies of a LEN-instruction filter (a chain
 * of JEQ on the syscall number ending in ALLOW, the shape seccompiler
 * emits) and reports the time. Prints the minimum and the mean.
 * With "search", a binary search over the chain's numbers goes in front
 * (as sbx's deny list has it: src/runtime/linux/seccomp.rs, `prefix`),
 * so a number the chain does not list is allowed in a few steps.
 *
 *   cc -O2 -o /tmp/seccomp_attach bench/seccomp_attach.c
 *   /tmp/seccomp_attach NF LEN [search]   e.g. 1 6, 3 6, 1 229, 1 229 search
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Instructions in a search over n sorted numbers, leaves of up to 4. */
static int tree_len(int n) {
  return n <= 4 ? n + 1 : 1 + tree_len(n / 2) + tree_len(n - n / 2);
}

/* Emit the search over keys[0..n) at out[*pc]: "allow" for a number not
 * among them, else a jump to `after` instructions past the tree's end.
 * Returns -1 if a jump does not fit in 8 bits. */
static int tree(const unsigned *keys, int n, int after, struct sock_filter *out,
                int *pc) {
  if (n <= 4) {
    for (int i = 0; i < n; i++) {
      if (n - i + after > 255) return -1;
      out[(*pc)++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                  keys[i], n - i + after, 0);
    }
    out[(*pc)++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return 0;
  }
  int mid = n / 2, left = tree_len(mid);
  if (left > 255) return -1;
  out[(*pc)++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
                                              keys[mid], left, 0);
  if (tree(keys, mid, tree_len(n - mid) + after, out, pc)) return -1;
  return tree(keys + mid, n - mid, after, out, pc);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int search = argc == 4 && !strcmp(argv[3], "search");
  if (argc != 3 && !search) {
    fprintf(stderr, "usage: %s FILTERS LENGTH [search]\n", argv[0]);
    return 2;
  }
  int nf = atoi(argv[1]), len = atoi(argv[2]), reps = 200;
  if (nf < 1 || len < 2 || len > 1000) return 2;
  struct sock_filter *f = calloc(2 * len + 16, sizeof *f);
  unsigned *keys = calloc(len, sizeof *keys);
  int pc = 0;
  f[pc++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                         offsetof(struct seccomp_data, nr));
  for (int i = 1; i < len; i++) keys[i - 1] = 1000 + i;
  if (search && tree(keys, len - 1, 0, f, &pc)) {
    fprintf(stderr, "too long for a search with 8-bit jumps\n");
    return 2;
  }
  for (int i = 1; i < len; i++)
    f[pc++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, keys[i - 1],
                                           len - 1 - i, 0);
  f[pc++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {pc, f};
  double best = 1e18, sum = 0;
  for (int r = 0; r < reps; r++) {
    int fd[2];
    if (pipe(fd)) return 1;
    pid_t c = fork();
    if (c == 0) {
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      double t = now_ns();
      for (int k = 0; k < nf; k++)
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) _exit(1);
      t = now_ns() - t;
      if (write(fd[1], &t, sizeof t) != sizeof t) _exit(1);
      _exit(0);
    }
    double t = 0;
    if (read(fd[0], &t, sizeof t) != sizeof t) return 1;
    waitpid(c, 0, 0);
    close(fd[0]);
    close(fd[1]);
    if (t < best) best = t;
    sum += t;
  }
  printf("%d filter(s) x %d instructions%s: min %.1f us, mean %.1f us\n", nf,
         pc, search ? " (with search)" : "", best / 1000, sum / reps / 1000);
  return 0;
}

/* What attaching a seccomp filter costs on this kernel, by filter count and
 * length (docs/performance.md). Each sample is a fresh child: it sets
 * no_new_privs, attaches NF copies of a LEN-instruction filter (a chain
 * of JEQ on the syscall number ending in ALLOW, the shape seccompiler
 * emits) and reports the time. Prints the minimum and the mean.
 *
 *   cc -O2 -o /tmp/seccomp_attach bench/seccomp_attach.c
 *   /tmp/seccomp_attach NF LEN      e.g. 1 6, 3 6, 1 108, 1 229
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILTERS LENGTH\n", argv[0]);
    return 2;
  }
  int nf = atoi(argv[1]), len = atoi(argv[2]), reps = 200;
  if (nf < 1 || len < 2 || len > 4000) return 2;
  struct sock_filter *f = calloc(len + 1, sizeof *f);
  f[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                      offsetof(struct seccomp_data, nr));
  for (int i = 1; i < len; i++)
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1000 + i,
                                        len - 1 - i, 0);
  f[len] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {len + 1, f};
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
  printf("%d filter(s) x %d instructions: min %.1f us, mean %.1f us\n", nf,
         len + 1, best / 1000, sum / reps / 1000);
  return 0;
}

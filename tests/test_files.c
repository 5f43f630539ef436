/* tests/test_files.c: path joins, mkdir -p, the durable create-new and replace writers and the
 * small readers (common/util/files.c). */
#include "nq/files.h"
#include "nq/nq.h"
#include "testutil.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static mode_t mode_of(const char *dir, const char *name) {
  char p[1024];
  struct stat st;
  ck_assert_int_eq(nq_path_join(p, sizeof p, dir, name), 0);
  ck_assert_int_eq(stat(p, &st), 0);
  return st.st_mode & 0777;
}

static void read_back(const char *dir, const char *name, const char *want) {
  char p[1024], *text = NULL;
  size_t n = 0;
  ck_assert_int_eq(nq_path_join(p, sizeof p, dir, name), 0);
  ck_assert_int_eq(nq_file_read(p, 1024, &text, &n), 0);
  ck_assert_uint_eq(n, strlen(want));
  ck_assert_str_eq(text, want);
  free(text);
}

/* No temporary file may be left behind by a writer that returned. */
static int tmp_files(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] == '.' && strstr(e->d_name, ".tmp") != NULL;
  closedir(d);
  return n;
}

/* The small helpers of nq/nq.h every module grows arrays and parses enum names with. */
START_TEST(grow_and_names) {
  int64_t *v = NULL;
  size_t cap = 0;
  for (size_t n = 0; n < 1000; n++) {
    ck_assert_int_eq(nq_grow(&v, &cap, n, sizeof *v, 8), 0);
    ck_assert(cap > n);
    v[n] = (int64_t)n;
  }
  ck_assert_uint_eq(cap, 1024); /* 8 doubled: 8, 16, ..., 1024 */
  for (size_t n = 0; n < 1000; n++) ck_assert_int_eq(v[n], (int64_t)n);
  /* A size that would overflow is refused and the array kept. */
  size_t huge = SIZE_MAX / 2 + 1;
  ck_assert_int_eq(nq_grow(&v, &huge, huge, sizeof *v, 8), NQ_ENOMEM);
  size_t big = SIZE_MAX / 8 + 1; /* doubled, more bytes than a size_t counts */
  ck_assert_int_eq(nq_grow(&v, &big, big, sizeof *v, 8), NQ_ENOMEM);
  ck_assert_int_eq(v[999], 999);
  free(v);
  static const char *const names[] = {"a", "", "bc", NULL};
  ck_assert_int_eq(nq_name_index(names, 4, "bc"), 2);
  ck_assert_int_eq(nq_name_index(names, 4, "a"), 0);
  ck_assert_int_eq(nq_name_index(names, 4, ""), -1); /* an empty entry never matches */
  ck_assert_int_eq(nq_name_index(names, 4, "b"), -1);
  ck_assert_int_eq(nq_name_index(names, 4, NULL), -1);
  ck_assert_int_eq(nq_name_index(names, 2, "bc"), -1); /* only the first n */
}
END_TEST

START_TEST(path_join) {
  char buf[8];
  ck_assert_int_eq(nq_path_join(buf, sizeof buf, "ab", "cd"), 0);
  ck_assert_str_eq(buf, "ab/cd");
  ck_assert_int_eq(nq_path_join(buf, sizeof buf, "abc", "defg"), NQ_EINVAL); /* 9 bytes */
  ck_assert_str_eq(buf, "");
  ck_assert_int_eq(nq_path_join(buf, sizeof buf, "abc", "def"), 0); /* exactly 8 */
}
END_TEST

START_TEST(mkdir_p) {
  char *dir = tu_tmpdir("files");
  char p[1024];
  snprintf(p, sizeof p, "%s/a/b/c", dir);
  ck_assert_int_eq(nq_mkdir_p(p, 0700), 0);
  ck_assert_int_eq(nq_mkdir_p(p, 0700), 0); /* idempotent */
  ck_assert_int_eq(mode_of(dir, "a/b/c"), 0700);
  snprintf(p, sizeof p, "%s/file", dir);
  FILE *f = fopen(p, "w");
  fclose(f);
  snprintf(p, sizeof p, "%s/file/sub", dir);
  ck_assert_int_eq(nq_mkdir_p(p, 0700), NQ_EIO);
  snprintf(p, sizeof p, "%s/file", dir);
  ck_assert_int_eq(nq_mkdir_p(p, 0700), NQ_EIO); /* exists, but not a directory */
  ck_assert_int_eq(nq_mkdir_p("", 0700), NQ_EINVAL);
  ck_assert_int_eq(nq_fsync_dir(dir), 0);
  ck_assert_int_eq(nq_fsync_dir("/proc/nq-no-such-dir"), NQ_EIO);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(create_new) {
  char *dir = tu_tmpdir("files");
  umask(022);
  ck_assert_int_eq(nq_file_create(dir, "key", "secret\n", 7, 0600), 0);
  ck_assert_int_eq(mode_of(dir, "key"), 0600);
  read_back(dir, "key", "secret\n");
  /* Never clobbered: the first writer wins. */
  ck_assert_int_eq(nq_file_create(dir, "key", "other\n", 6, 0644), NQ_EEXIST);
  read_back(dir, "key", "secret\n");
  ck_assert_int_eq(mode_of(dir, "key"), 0600);
  /* The mode is exact, whatever the umask. */
  umask(077);
  ck_assert_int_eq(nq_file_create(dir, "cert", "pem", 3, 0644), 0);
  ck_assert_int_eq(mode_of(dir, "cert"), 0644);
  umask(022);
  ck_assert_int_eq(tmp_files(dir), 0);
  ck_assert_int_eq(nq_file_create("/proc/nq-no-such-dir", "x", "y", 1, 0600), NQ_EIO);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(replace) {
  char *dir = tu_tmpdir("files");
  ck_assert_int_eq(nq_file_replace(dir, "entry", "one", 3, 0600), 0);
  read_back(dir, "entry", "one");
  ck_assert_int_eq(nq_file_replace(dir, "entry", "two!", 4, 0600), 0);
  read_back(dir, "entry", "two!");
  ck_assert_int_eq(nq_file_replace(dir, "empty", "", 0, 0644), 0);
  read_back(dir, "empty", "");
  ck_assert_int_eq(mode_of(dir, "empty"), 0644);
  /* A stale temporary of this very process id (a crashed earlier run) does not get in the way. */
  char stale[256], p[1024];
  snprintf(stale, sizeof stale, ".entry.%ld.tmp", (long)getpid());
  snprintf(p, sizeof p, "%s/%s", dir, stale);
  FILE *f = fopen(p, "w");
  fputs("torn", f);
  fclose(f);
  ck_assert_int_eq(nq_file_replace(dir, "entry", "three", 5, 0600), 0);
  read_back(dir, "entry", "three");
  ck_assert_int_eq(tmp_files(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The volatile writer: the same atomic replace (never a partial file, no temporary left, the mode
 * exact, a stale temporary of ours no obstacle), without the fsyncs; and a lock held by this
 * process refuses a second taker. */
START_TEST(replace_volatile_and_lock) {
  char *dir = tu_tmpdir("files");
  ck_assert_int_eq(nq_file_replace_volatile(dir, "entry", "one", 3, 0600), 0);
  read_back(dir, "entry", "one");
  ck_assert_int_eq(mode_of(dir, "entry"), 0600);
  char p[1024];
  snprintf(p, sizeof p, "%s/.entry.%ld.tmp", dir, (long)getpid());
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs("torn", f);
  fclose(f);
  ck_assert_int_eq(nq_file_replace_volatile(dir, "entry", "two!", 4, 0644), 0);
  read_back(dir, "entry", "two!");
  ck_assert_int_eq(mode_of(dir, "entry"), 0644);
  ck_assert_int_eq(tmp_files(dir), 0);
  int fd = -1, fd2 = -1;
  long holder = 0;
  ck_assert_int_eq(nq_dir_lock(dir, "x.lock", &fd, &holder), 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(nq_dir_lock(dir, "x.lock", &fd2, &holder), NQ_EBUSY);
  ck_assert_int_eq(fd2, -1);
  ck_assert_int_eq(holder, (long)getpid());
  close(fd);
  ck_assert_int_eq(nq_dir_lock(dir, "x.lock", &fd2, NULL), 0);
  close(fd2);
  snprintf(p, sizeof p, "%s/missing-dir", dir);
  ck_assert_int_eq(nq_dir_lock(p, "x.lock", &fd, NULL), NQ_EIO);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(read_small_and_line) {
  char *dir = tu_tmpdir("files");
  char p[1024], buf[16], *text = NULL;
  size_t n;
  snprintf(p, sizeof p, "%s/missing", dir);
  ck_assert_int_eq(nq_file_read(p, 10, &text, &n), NQ_ENOTFOUND);
  ck_assert_int_eq(nq_file_read_line(p, buf, sizeof buf), NQ_ENOTFOUND);
  ck_assert_int_eq(nq_file_replace(dir, "big", "0123456789A", 11, 0600), 0);
  snprintf(p, sizeof p, "%s/big", dir);
  ck_assert_int_eq(nq_file_read(p, 10, &text, &n), NQ_ETOOBIG);
  ck_assert_int_eq(nq_file_read(p, 11, &text, &n), 0);
  ck_assert_uint_eq(n, 11);
  free(text);
  /* First line, surrounding blanks removed. */
  ck_assert_int_eq(nq_file_replace(dir, "tok", "  abc123 \r\nsecond\n", 18, 0600), 0);
  snprintf(p, sizeof p, "%s/tok", dir);
  ck_assert_int_eq(nq_file_read_line(p, buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "abc123");
  ck_assert_int_eq(nq_file_read_line(p, buf, 6), NQ_ETOOBIG);
  ck_assert_int_eq(nq_file_read_line(p, buf, 7), 0);
  ck_assert_int_eq(nq_file_replace(dir, "blank", " \n", 2, 0600), 0);
  snprintf(p, sizeof p, "%s/blank", dir);
  ck_assert_int_eq(nq_file_read_line(p, buf, sizeof buf), NQ_EINVAL);
  ck_assert_int_eq(nq_file_replace(dir, "noeol", "xyz", 3, 0600), 0);
  snprintf(p, sizeof p, "%s/noeol", dir);
  ck_assert_int_eq(nq_file_read_line(p, buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "xyz");
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("files");
  TCase *tc = tcase_create("files");
  tcase_add_test(tc, grow_and_names);
  tcase_add_test(tc, path_join);
  tcase_add_test(tc, mkdir_p);
  tcase_add_test(tc, create_new);
  tcase_add_test(tc, replace);
  tcase_add_test(tc, replace_volatile_and_lock);
  tcase_add_test(tc, read_small_and_line);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }

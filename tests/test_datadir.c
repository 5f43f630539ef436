/* The data directory (server/core/datadir.c): what a start makes, and the permissions it enforces
 * on a directory and files that already existed with looser ones (issue 12). */
#include "datadir.h"
#include "nq/nq.h"
#include "store_api.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned mode_of(const char *dir, const char *name) {
  char p[1200];
  snprintf(p, sizeof p, "%s%s%s", dir, name ? "/" : "", name ? name : "");
  struct stat sb;
  ck_assert_msg(stat(p, &sb) == 0, "%s missing", p);
  return (unsigned)(sb.st_mode & 07777);
}

static void make_file(const char *dir, const char *name, mode_t mode) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(chmod(p, mode), 0); /* whatever the umask */
}

START_TEST(fresh_directory_is_private) {
  char *base = tu_tmpdir("datadir");
  ck_assert_ptr_nonnull(base);
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/data", base);
  srv_datadir_t dd;
  char err[256] = "";
  ck_assert_msg(srv_datadir_init(&dd, dir, NULL, err, sizeof err) == 0, "%s", err);
  ck_assert(dd.created);
  ck_assert_uint_eq(mode_of(dir, NULL), 0700);
  ck_assert_uint_eq(mode_of(dir, SRV_DB_FILE), 0600); /* made before SQLite would, at 0644 */
  ck_assert_uint_eq(mode_of(dir, SRV_ENROL_FILE), 0600);
  ck_assert_uint_eq(mode_of(dir, SRV_ADMIN_FILE), 0600);
  srv_datadir_close(&dd);
  tu_rmtree(base);
  free(base);
}
END_TEST

START_TEST(loose_directory_is_tightened) {
  char *dir = tu_tmpdir("datadir");
  ck_assert_ptr_nonnull(dir);
  ck_assert_int_eq(chmod(dir, 0755), 0);
  make_file(dir, SRV_DB_FILE, 0644);
  make_file(dir, SRV_DB_FILE "-wal", 0644);
  make_file(dir, SRV_DB_FILE "-shm", 0664);
  make_file(dir, "notes.txt", 0644); /* not ours: left alone */
  srv_datadir_t dd;
  char err[256] = "";
  ck_assert_msg(srv_datadir_init(&dd, dir, NULL, err, sizeof err) == 0, "%s", err);
  ck_assert(!dd.created);
  ck_assert_uint_eq(mode_of(dir, NULL), 0700);
  ck_assert_uint_eq(mode_of(dir, SRV_DB_FILE), 0600);
  ck_assert_uint_eq(mode_of(dir, SRV_DB_FILE "-wal"), 0600);
  ck_assert_uint_eq(mode_of(dir, SRV_DB_FILE "-shm"), 0600);
  ck_assert_uint_eq(mode_of(dir, "notes.txt"), 0644);
  /* Permissions are only taken away, never added: a read-only database stays read-only. */
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", dir, SRV_DB_FILE);
  ck_assert_int_eq(chmod(p, 0400), 0);
  srv_datadir_close(&dd); /* its lock too, as at a server's exit */
  ck_assert_msg(srv_datadir_init(&dd, dir, NULL, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(mode_of(dir, SRV_DB_FILE), 0400);
  srv_datadir_close(&dd);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A database with enrolled clients restored without its CA: the start is refused, naming the
 * files to put back, unless --new-ca; with the CA, or without clients, it goes on. */
START_TEST(restored_without_ca_refused) {
  char *dir = tu_tmpdir("ca");
  ck_assert_ptr_nonnull(dir);
  char db[600], err[1024], cmd[700];
  snprintf(db, sizeof db, "%s/nq.db", dir);
  srv_store_t *st = NULL;
  ck_assert_int_eq(srv_store_open(&st, db, NQ_SOURCE_DIR "/schema", err, sizeof err), 0);
  srv_store_close(st);
  ck_assert_int_eq(srv_datadir_ca_check(dir, 0, err, sizeof err), 0); /* no client yet */
  ck_assert_int_eq(srv_store_open(&st, db, NQ_SOURCE_DIR "/schema", err, sizeof err), 0);
  srv_client_t c;
  ck_assert_int_eq(srv_client_create(st, "alice-1", "hash-a", 1700000000, &c), 0);
  srv_store_close(st);
  err[0] = '\0';
  ck_assert_int_eq(srv_datadir_ca_check(dir, 0, err, sizeof err), NQ_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "1 enrolled client"));
  ck_assert_ptr_nonnull(strstr(err, "ca.pem"));
  ck_assert_ptr_nonnull(strstr(err, "ca.key"));
  ck_assert_ptr_nonnull(strstr(err, "--new-ca"));
  ck_assert_int_eq(srv_datadir_ca_check(dir, 1, err, sizeof err), 0);
  /* The CA back in place: the start goes on (srv_datadir_init makes the rest). */
  srv_datadir_t dd;
  ck_assert_int_eq(srv_datadir_init(&dd, dir, NULL, err, sizeof err), 0);
  srv_datadir_close(&dd);
  ck_assert_int_eq(srv_datadir_ca_check(dir, 0, err, sizeof err), 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("datadir");
  TCase *tc = tcase_create("datadir");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, fresh_directory_is_private);
  tcase_add_test(tc, loose_directory_is_tightened);
  tcase_add_test(tc, restored_without_ca_refused);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}

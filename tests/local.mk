## tests/local.mk - unit tests (TAP), CLI tests, the hostlist fuzz target and
## the plugin under a real Slurm cluster (tests/cluster).
TEST_EXTENSIONS = .sh
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
SH_LOG_DRIVER = $(LOG_DRIVER)
AM_TESTS_ENVIRONMENT = \
	COHORT_SRCDIR='$(abs_top_srcdir)'; export COHORT_SRCDIR; \
	COHORT_BUILDDIR='$(abs_top_builddir)'; export COHORT_BUILDDIR; \
	CC='$(CC)'; export CC;
if HAVE_PYTHON
AM_TESTS_ENVIRONMENT += COHORT_PYTHON='$(PYTHON)'; export COHORT_PYTHON;
endif
if SANITIZERS
AM_TESTS_ENVIRONMENT += \
	COHORT_SANITIZED=1; export COHORT_SANITIZED; \
	LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0'; \
	export LSAN_OPTIONS;
endif

UNIT_LDADD = runtime/planner/libcohort_planner.la
EXTRA_DIST += tests/unit/tap.h tests/fixtures/make-fixtures.py \
	tests/fixtures/dgx-a100.xml tests/fixtures/dgx-h100.xml tests/fixtures/demo.env

check_PROGRAMS += tests/unit/test_hostlist tests/unit/test_tasks_per_node \
	tests/unit/test_ports tests/unit/test_step tests/unit/test_plan tests/unit/test_base \
	tests/fuzz/fuzz_hostlist_replay
TESTS += tests/unit/test_hostlist tests/unit/test_tasks_per_node \
	tests/unit/test_ports tests/unit/test_step tests/unit/test_plan tests/unit/test_base \
	tests/fuzz/fuzz_hostlist_replay tests/cohort-info.sh tests/cohort-launch.sh
EXTRA_DIST += tests/tap.sh tests/lsan.supp tests/cohort-info.sh tests/cohort-launch.sh tests/fuzz/run-libfuzzer.sh tests/fuzz/corpus

tests_unit_test_hostlist_LDADD = $(UNIT_LDADD)
tests_unit_test_tasks_per_node_LDADD = $(UNIT_LDADD)
tests_unit_test_ports_LDADD = $(UNIT_LDADD)
tests_unit_test_base_LDADD = $(UNIT_LDADD)
tests_unit_test_step_LDADD = $(UNIT_LDADD)
tests_unit_test_plan_LDADD = $(UNIT_LDADD)
tests_unit_test_plan_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURES='"$(abs_top_srcdir)/tests/fixtures"'
tests_unit_test_step_CPPFLAGS = $(tests_unit_test_plan_CPPFLAGS)

tests_fuzz_fuzz_hostlist_replay_SOURCES = tests/fuzz/fuzz_hostlist.c tests/fuzz/replay_main.c
tests_fuzz_fuzz_hostlist_replay_CPPFLAGS = $(AM_CPPFLAGS) -DCORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus"'
tests_fuzz_fuzz_hostlist_replay_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_plugin_args tests/unit/test_mps
TESTS += tests/unit/test_plugin_args tests/unit/test_mps
if HAVE_SPANK
check_PROGRAMS += tests/unit/test_mps_daemon
TESTS += tests/unit/test_mps_daemon
tests_unit_test_mps_daemon_SOURCES = tests/unit/test_mps_daemon.c plugin/mps.c plugin/mps_proc.c
tests_unit_test_mps_daemon_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugin \
	-DFAKE_MPS='"$(abs_top_srcdir)/tests/cluster/fake-mps-control"'
tests_unit_test_mps_daemon_LDADD = runtime/apply/libcohort_apply.la $(UNIT_LDADD)
# The plugin's watch of the node agent, with real task processes.
check_PROGRAMS += tests/unit/test_agent_watch
TESTS += tests/unit/test_agent_watch
tests_unit_test_agent_watch_SOURCES = tests/unit/test_agent_watch.c plugin/agent_watch.c \
	plugin/task_tell.c plugin/mps_proc.c
tests_unit_test_agent_watch_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) -I$(top_srcdir)/plugin
tests_unit_test_agent_watch_LDADD = -lpthread
# The plugin's part of the step watch: the job's choice, the agent's record
# lines, the tasks' variables.
check_PROGRAMS += tests/unit/test_watch_step
TESTS += tests/unit/test_watch_step
tests_unit_test_watch_step_SOURCES = tests/unit/test_watch_step.c plugin/watch_step.c \
	plugin/plugin_args.c plugin/spank_env.c
tests_unit_test_watch_step_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) -I$(top_srcdir)/plugin \
	-DCOHORT_NCCL_PROFILER_PATH='"$(pkglibdir)/libcohort-nccl-profiler.so"'
tests_unit_test_watch_step_LDADD = runtime/apply/libcohort_apply.la \
	runtime/watch/libcohort_watch_tree.la $(UNIT_LDADD)
endif
tests_unit_test_mps_LDADD = $(UNIT_LDADD)
tests_unit_test_mps_CPPFLAGS = $(tests_unit_test_plan_CPPFLAGS)
tests_unit_test_plugin_args_SOURCES = tests/unit/test_plugin_args.c plugin/plugin_args.c
tests_unit_test_plugin_args_LDADD = runtime/apply/libcohort_apply.la $(UNIT_LDADD)

if HAVE_LIBSLURM
check_PROGRAMS += tests/unit/test_hostlist_slurm
TESTS += tests/unit/test_hostlist_slurm
tests_unit_test_hostlist_slurm_LDADD = $(UNIT_LDADD) $(SLURM_LIBS)
tests_unit_test_hostlist_slurm_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
endif

# The plugin under real Slurm daemons (skips itself where they cannot run);
# its per-step MPS daemon with a stand-in for nvidia-cuda-mps-control.
check_PROGRAMS += tests/cluster/probe
TESTS += tests/slurm-cluster.sh tests/mps.sh tests/topo-cache.sh
EXTRA_DIST += tests/slurm-cluster.sh tests/mps.sh tests/topo-cache.sh tests/cluster/fake-mps-control \
	tests/cluster/test-cluster.sh \
	tests/cluster/cluster.sh tests/cluster/host-init.sh \
	tests/cluster/ddp_train.py tests/cluster/seed_style.py tests/cluster/yolo_style.py

# The runtime's bootstrap: frames, the secret's proofs, the frame decoder's
# fuzz corpus.
check_PROGRAMS += tests/unit/test_wire tests/unit/test_auth tests/unit/test_session \
	tests/unit/test_net_admit tests/unit/test_net_lost tests/unit/test_net_cap \
	tests/unit/test_net_pool tests/fuzz/fuzz_wire_replay
TESTS += tests/unit/test_wire tests/unit/test_auth tests/unit/test_session \
	tests/unit/test_net_admit tests/unit/test_net_lost tests/unit/test_net_cap \
	tests/unit/test_net_pool tests/fuzz/fuzz_wire_replay
tests_unit_test_net_admit_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_net_cap_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_net_lost_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_net_pool_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_session_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_wire_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_unit_test_auth_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_fuzz_fuzz_wire_replay_SOURCES = tests/fuzz/fuzz_wire.c tests/fuzz/replay_main.c
tests_fuzz_fuzz_wire_replay_CPPFLAGS = $(AM_CPPFLAGS) -DCORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus-wire"'
tests_fuzz_fuzz_wire_replay_LDADD = runtime/net/libcohort_net.la $(UNIT_LDADD)
EXTRA_DIST += tests/fuzz/corpus-wire

# The work coordinator's scheduling and lease logic, on a simulated clock.
check_PROGRAMS += tests/unit/test_sched tests/unit/test_sched_budget
TESTS += tests/unit/test_sched tests/unit/test_sched_budget
tests_unit_test_sched_LDADD = runtime/work/libcohort_work_sched.la $(UNIT_LDADD)
tests_unit_test_sched_budget_LDADD = runtime/work/libcohort_work_sched.la $(UNIT_LDADD)

# PyTorch's store's core: the TCPStore protocol, keys, waits, watches and
# queues, with no socket and no clock of its own.
check_PROGRAMS += tests/unit/test_tcpstore tests/unit/test_store_kv tests/unit/test_store_kv_model \
	tests/unit/test_store_kv_watch
TESTS += tests/unit/test_tcpstore tests/unit/test_store_kv tests/unit/test_store_kv_model \
	tests/unit/test_store_kv_watch
EXTRA_DIST += tests/unit/store_kv_test.h tests/unit/net_test.h tests/unit/relay_test.h
tests_unit_test_tcpstore_LDADD = runtime/store/libcohort_store.la runtime/net/libcohort_net.la \
	$(UNIT_LDADD)
tests_unit_test_store_kv_LDADD = $(tests_unit_test_tcpstore_LDADD)
tests_unit_test_store_kv_model_LDADD = $(tests_unit_test_tcpstore_LDADD)
tests_unit_test_store_kv_watch_LDADD = $(tests_unit_test_tcpstore_LDADD)

# The placement of streams on workers, on a simulated clock.
check_PROGRAMS += tests/unit/test_place tests/unit/test_place_model tests/unit/test_place_same
TESTS += tests/unit/test_place tests/unit/test_place_model tests/unit/test_place_same
tests_unit_test_place_LDADD = runtime/streams/libcohort_place.la $(UNIT_LDADD)
tests_unit_test_place_model_LDADD = runtime/streams/libcohort_place.la $(UNIT_LDADD)
tests_unit_test_place_same_LDADD = runtime/streams/libcohort_place.la $(UNIT_LDADD)
# The scale simulators (bench/scale_sim, boot_sim, streams_sim, built by
# `make check`) still drive the real code to a whole result.
TESTS += tests/simulators.sh
EXTRA_DIST += tests/simulators.sh

# libcohort's bootstrap with many processes on this machine.
check_PROGRAMS += tests/bootstrap/spawn tests/bootstrap/boot_check tests/bootstrap/attack
TESTS += tests/bootstrap.sh
EXTRA_DIST += tests/bootstrap.sh
tests_bootstrap_attack_LDADD = runtime/bootstrap/libcohort_bootstrap.la \
	runtime/net/libcohort_net.la $(UNIT_LDADD)
tests_bootstrap_boot_check_LDADD = runtime/libcohort/libcohort.la
# no libtool wrapper script: 1024 of them would cost a minute of shell
tests_bootstrap_boot_check_LDFLAGS = -no-install
# The stream sets' messages.
check_PROGRAMS += tests/unit/test_streams_msg
TESTS += tests/unit/test_streams_msg
tests_unit_test_streams_msg_LDADD = runtime/streams/libcohort_streams_msg.la \
	runtime/net/libcohort_net.la $(UNIT_LDADD)
# The work queue's messages and the coordinator's start record.
check_PROGRAMS += tests/unit/test_work_msg
TESTS += tests/unit/test_work_msg
tests_unit_test_work_msg_LDADD = runtime/coord_start/libcohort_coord_start.la \
	runtime/work/libcohort_work_msg.la runtime/net/libcohort_net.la $(UNIT_LDADD)
# A node relay whose way up closes (the real cohort-work-coord, started
# as a rank starts it): its node's ranks, the one that comes late too,
# told where.
check_PROGRAMS += tests/unit/test_relay
TESTS += tests/unit/test_relay
tests_unit_test_relay_LDADD = runtime/coord_start/libcohort_coord_start.la \
	runtime/net/libcohort_net.la $(UNIT_LDADD) -lpthread
EXTRA_tests_unit_test_relay_DEPENDENCIES = runtime/coord/cohort-work-coord
# The node's relay process of a step: a second queue's relay run by the
# first's process, strangers, the open-file count, its end; the node
# agent's.
check_PROGRAMS += tests/unit/test_host
TESTS += tests/unit/test_host
tests_unit_test_host_LDADD = runtime/coord_start/libcohort_coord_start.la \
	runtime/net/libcohort_net.la $(UNIT_LDADD) -lpthread
EXTRA_tests_unit_test_host_DEPENDENCIES = runtime/coord/cohort-work-coord \
	runtime/agent/cohort-agent
# The work queue: workers, the coordinator, its journal, across many
# processes on this machine.
check_PROGRAMS += tests/work/work_check
TESTS += tests/work.sh
EXTRA_DIST += tests/work.sh
# A queue's results published exactly once, through kills at every point.
TESTS += tests/output.sh
EXTRA_DIST += tests/output.sh tests/work/output_verify.py
tests_work_work_check_SOURCES = tests/work/work_check.c tests/work/proc_child.c \
	tests/work/proc_child.h
tests_work_work_check_LDADD = runtime/libcohort/libcohort.la -lpthread
tests_work_work_check_LDFLAGS = -no-install

# Stream sets: many workers on this machine as simulated nodes.
check_PROGRAMS += tests/streams/streams_check
TESTS += tests/streams.sh
EXTRA_DIST += tests/streams.sh
tests_streams_streams_check_SOURCES = tests/streams/streams_check.c tests/work/proc_child.c \
	tests/work/proc_child.h
tests_streams_streams_check_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/work
tests_streams_streams_check_LDADD = runtime/libcohort/libcohort.la -lm
tests_streams_streams_check_LDFLAGS = -no-install
check_PROGRAMS += examples/work_queue
examples_work_queue_LDADD = runtime/libcohort/libcohort.la
examples_work_queue_LDFLAGS = -no-install
# libcohort's API for bindings: version, options by size, error codes.
check_PROGRAMS += tests/bootstrap/errc_check tests/unit/test_api
TESTS += tests/unit/test_api
tests_bootstrap_errc_check_LDADD = runtime/libcohort/libcohort.la
tests_bootstrap_errc_check_LDFLAGS = -no-install
tests_unit_test_api_LDADD = runtime/libcohort/libcohort.la

TESTS += tests/nccl.sh
EXTRA_DIST += tests/nccl.sh
if HAVE_NCCL
check_PROGRAMS += tests/bootstrap/nccl_check
tests_bootstrap_nccl_check_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_bootstrap_nccl_check_LDADD = runtime/libcohort/libcohort-nccl.la \
	runtime/libcohort/libcohort.la $(CUDA_LIBS)
tests_bootstrap_nccl_check_LDFLAGS = -no-install
# cohort_nccl_init's sequence of NCCL calls, checked against a stand-in for
# CUDA and NCCL that records them (tests/nccl.sh; no GPU needed).
check_PROGRAMS += tests/bootstrap/nccl_seq
tests_bootstrap_nccl_seq_SOURCES = tests/bootstrap/nccl_check.c tests/bootstrap/nccl_standin.c \
	runtime/libcohort/cohort_nccl.c runtime/libcohort/cohort_nccl.h
tests_bootstrap_nccl_seq_CPPFLAGS = $(tests_bootstrap_nccl_check_CPPFLAGS)
tests_bootstrap_nccl_seq_LDADD = runtime/libcohort/libcohort.la -lpthread
tests_bootstrap_nccl_seq_LDFLAGS = -no-install
# The NCCL example must build (it runs only where there are GPUs).
check_PROGRAMS += examples/allreduce
examples_allreduce_CPPFLAGS = $(tests_bootstrap_nccl_check_CPPFLAGS)
examples_allreduce_LDADD = $(tests_bootstrap_nccl_check_LDADD)
endif

# The test cluster's directory (daemons' state and logs, kept after a run
# for reading when something failed).
clean-local:
	rm -rf tests/cluster-run tests/python-cluster-run tests/store-run tests/mps-run tests/topo-cache-run \
		tests/watch-run tests/watch-tree-run \
		bench-cluster demo-cluster

# Hardening of what runs in slurmstepd or in jobs (relro/now, stack
# protector, fortify) and libcohort's interface (no hwloc, only cohort_*
# exported, all of cohort.h exported), read from the built ELF files.
TESTS += tests/hardening.sh
EXTRA_DIST += tests/hardening.sh

# The work queue's journal: replay, other queues, the lock; the file it
# must be (no link, writable by its owner alone); torn tails against
# damage; reading in linear time (counted); and cohort-work over journals
# written independently.
check_PROGRAMS += tests/unit/test_journal tests/unit/test_journal_file \
	tests/unit/test_journal_torn tests/unit/test_journal_linear
TESTS += tests/unit/test_journal tests/unit/test_journal_file tests/unit/test_journal_torn \
	tests/unit/test_journal_linear tests/cohort-work.sh
EXTRA_DIST += tests/cohort-work.sh tests/unit/journal_test.h
tests_unit_test_journal_LDADD = runtime/work/libcohort_work_journal.la $(UNIT_LDADD)
tests_unit_test_journal_file_LDADD = $(tests_unit_test_journal_LDADD)
tests_unit_test_journal_torn_LDADD = $(tests_unit_test_journal_LDADD)
tests_unit_test_journal_linear_LDADD = $(tests_unit_test_journal_LDADD)
# Results published exactly once: a part's head, the journal's publication
# record, the scheduler's all-or-nothing commit.
check_PROGRAMS += tests/unit/test_output tests/unit/test_output_model
TESTS += tests/unit/test_output tests/unit/test_output_model
tests_unit_test_output_LDADD = runtime/work/libcohort_work_parts.la \
	runtime/work/libcohort_work_journal.la runtime/work/libcohort_work_sched.la $(UNIT_LDADD)

# The Python package: every call, its errors and the ctypes prototypes
# against the headers (pytest, as TAP); the two PyTorch examples on the
# test cluster.
check_PROGRAMS += tests/python/layout
TESTS += tests/store-local.sh tests/store.sh tests/store-limits.sh tests/store-torch.sh
EXTRA_DIST += tests/store-limits.sh tests/store/store_limits.py tests/store/cohort_agent.py \
	tests/store-torch.sh tests/store/torch_store_tests.py
EXTRA_DIST += tests/store-local.sh tests/store.sh tests/store/store_ops.py tests/store/store_queue.py \
	tests/store/store_kill.py tests/store/store_agent_dies.py tests/store/store_stranger.py \
	tests/store/stranger.py tests/store/store_client.py tests/store/store_pg.py
# The step watch under real Slurm: a rank killed or stopped, a node's link
# lost, a slow step, a stranger, the option's sources.
TESTS += tests/watch.sh
EXTRA_DIST += tests/watch.sh tests/watch/watch_loop.py tests/watch/watch-lib.sh
# The agents' tree of nodes on 4 nodes: its shape, a death two agents below
# the holder, a middle node lost, a parent that leaves first, healthy runs.
TESTS += tests/watch-tree.sh
EXTRA_DIST += tests/watch-tree.sh
# The watch without Slurm on one node: a stopped rank named (Gloo here; NCCL
# with the profiler plugin loaded by NCCL where a GPU is there).
TESTS += tests/watch-nccl.sh
EXTRA_DIST += tests/watch-nccl.sh tests/watch/watch_nccl.py
TESTS += tests/python.sh tests/python-cluster.sh
EXTRA_DIST += tests/python.sh tests/python-cluster.sh tests/python/conftest.py \
	tests/python/ranks.py tests/python/test_api.py tests/python/test_collectives.py \
	tests/python/test_prototypes.py tests/python/test_streams.py tests/python/test_work.py \
	examples/infer_images.py examples/camera_streams.py

# A prefix install writes only under the prefix.
TESTS += tests/install-prefix.sh
EXTRA_DIST += tests/install-prefix.sh

# The layers of runtime/README.md: includes and calls only go down.
TESTS += tests/layers.sh
EXTRA_DIST += tests/layers.sh tests/layers.py runtime/README.md

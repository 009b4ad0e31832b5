"""A fatal signal ends a program under `syncscope run` whenever it ends it under plain python, even
where our Python-level handler cannot run on the main thread (runtime/signal_backstop.py).

Each program runs under plain `python` and under `syncscope run --device sim` (test_exit_paths's
`run_both`). Without the backstop the first three programs hang under `syncscope run`: the
signal is caught, but the main thread waits in a call the signal did not interrupt."""

import glob
import json
import signal

from test_exit_paths import assert_kept, assert_no_leftovers, run_both

# The kernel gives a process-directed signal to any thread that does not block it. Here it goes to
# another thread on purpose (a thread-directed kill), while the main thread waits on a
# multiprocessing lock that only a handler would end: CPython's C handler notes the signal on
# that thread and the main thread is never interrupted.
SIGNAL_ON_ANOTHER_THREAD = """
import multiprocessing
def block_the_main_thread_and_take_the_signal_elsewhere():
    held = multiprocessing.Lock()
    held.acquire()

    def take_it_here():
        time.sleep(0.5)  # the main thread is waiting by then
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    threading.Thread(target=take_it_here, daemon=True).start()
    held.acquire()  # released by nobody
"""


def test_a_sigterm_the_main_thread_never_sees_still_ends_the_run_with_its_report(tmp_path):
    body = SIGNAL_ON_ANOTHER_THREAD + """
sync_here()
print("before", flush=True)
block_the_main_thread_and_take_the_signal_elsewhere()
print("not reached", flush=True)
"""
    plain, traced, report = run_both(tmp_path, body, timeout=60)
    assert plain.returncode == traced.returncode == -signal.SIGTERM
    assert traced.stdout == plain.stdout == "before\n"
    assert report["status"] == "killed" and report["exit_code"] == -signal.SIGTERM
    assert_kept(report)
    assert_no_leftovers(tmp_path)


def test_a_main_thread_stuck_in_native_code_dies_of_the_signal_after_the_stuck_path(tmp_path):
    # pthread_mutex_lock retries on EINTR inside libc: no poke reaches the handler (as with a hung
    # collective). Plain python dies of SIGTERM at once; under syncscope the backstop's thread
    # writes the report and ends the process with the same signal.
    body = """
import ctypes
libc = ctypes.CDLL(None)
mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER, a normal mutex
libc.pthread_mutex_lock(mutex)
sync_here()
threading.Thread(target=lambda: (time.sleep(0.5), os.kill(os.getpid(), signal.SIGTERM)), daemon=True).start()
print("before", flush=True)
libc.pthread_mutex_lock(mutex)  # relocking a normal mutex: waits forever, the GIL released
"""
    plain, traced, report = run_both(tmp_path, body, timeout=60)
    assert plain.returncode == traced.returncode == -signal.SIGTERM
    assert traced.stdout == plain.stdout == "before\n"
    assert report["status"] == "killed" and report["exit_code"] == -signal.SIGTERM
    assert_kept(report)


def test_a_child_whose_main_thread_never_sees_the_sigterm_writes_its_report_and_dies(tmp_path):
    # Pool.terminate()'s SIGTERM reaching an idle worker just before it blocks on the inqueue's
    # lock hung the parent's join now and then (docs/runtime.md); this is the same wait, made
    # certain.
    body = SIGNAL_ON_ANOTHER_THREAD + """
def child():
    sync_here()
    block_the_main_thread_and_take_the_signal_elsewhere()

if __name__ == "__main__":
    p = multiprocessing.get_context("fork").Process(target=child)
    p.start()
    p.join()
    print("child exit code", p.exitcode, flush=True)
"""
    plain, traced, report = run_both(tmp_path, body, timeout=60)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout == f"child exit code {-signal.SIGTERM}\n"
    (child_report,) = [json.load(open(p)) for p in glob.glob(str(tmp_path / "report.*.json"))]
    assert child_report["status"] == "killed"
    assert_kept(child_report)


def test_a_handler_the_program_installs_over_ours_is_left_alone(tmp_path):
    # The program catches SIGTERM itself and goes on: the backstop must neither poke nor kill.
    body = """
caught = []
signal.signal(signal.SIGTERM, lambda s, f: caught.append(s))
threading.Thread(target=lambda: signal.pthread_kill(threading.get_ident(), signal.SIGTERM)).start()
deadline = time.monotonic() + 4  # past the backstop's GIVE_UP_AFTER
while time.monotonic() < deadline:
    time.sleep(0.1)
print("caught", caught, flush=True)
"""
    plain, traced, report = run_both(tmp_path, body, timeout=60)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout == f"caught [{int(signal.SIGTERM)}]\n"
    assert report["status"] == "completed"


def test_the_program_never_sees_our_wakeup_fd(tmp_path):
    # Trio warns when set_wakeup_fd returns a descriptor it did not set; asyncio sets its own and
    # later unsets it. Under syncscope both must see what plain python shows them.
    body = """
import socket
a, b = socket.socketpair()
a.setblocking(False)
first = signal.set_wakeup_fd(a.fileno())
second = signal.set_wakeup_fd(-1)
print(first, second == a.fileno(), signal.set_wakeup_fd(-1), threading.active_count(), flush=True)
"""
    plain, traced, report = run_both(tmp_path, body, timeout=60)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout == "-1 True -1 1\n"  # and our thread is not the program's

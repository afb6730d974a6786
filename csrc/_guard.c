/* ggscope.source._guard: a file that shrinks under its memory map ends the command with
   one line naming the file and exit status 2, never a bare SIGBUS.

   Why: ggscope maps every local file read-only and its parser, metadata arrays and
   rules read through that map; when another process truncates the file, touching a
   page past the new end raises SIGBUS and the process dies with status 135 and no word
   (issue 23 item 4).  Tensor data is already read with read(2) (FileChanged), but the
   header is parsed through the map.  A signal handler is the one place that can turn
   that fault into a message: it cannot resume the interrupted code, so it writes the
   line prepared for the mapping the faulting address lies in, puts the terminal back
   the way it was when the guard was installed (the browser switches it to raw mode
   and the alternate screen), and ends the process with _exit(2).  A fault outside
   every watched mapping is not ours: the default action runs as before.

   Everything the handler touches is async-signal-safe: a fixed table filled before
   any fault, an atomic flag, write(2), pause(2), tcgetattr/tcsetattr and _exit(2).  The
   statistics of ``ggscope stats`` read tensor data through the map on two threads, so
   two threads can fault at once: the first writes the line and ends the process, the
   others wait in pause() for that.

   Contract: install() sets the handler (once; the CLI calls it); watch(address, size,
   message) records a mapping and the bytes to write if it faults (the newest of
   WATCHED mappings win, so an address reused by a later map names the later file);
   WATCHED is exported: a map recorded that many watches ago is no longer guarded. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define WATCHED 256
#define MESSAGE 1024                 /* bytes of one message; ggscope.source.changes keeps them under */

typedef struct {
    uintptr_t start, end;
    size_t len;
    char msg[MESSAGE];
} Watch;

static Watch table[WATCHED];
static volatile sig_atomic_t count = 0;      /* entries ever recorded; slot = n % WATCHED */
static struct termios saved;
static int have_saved = 0;
static struct sigaction previous;
static volatile sig_atomic_t claimed = 0;    /* a thread is writing the line: the others wait for _exit */

/* leave the alternate screen, show the cursor, stop mouse reports and bracketed paste */
static const char RESET[] = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[?1049l";

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    (void) context;
    uintptr_t at = (uintptr_t) info->si_addr;
    int n = count;
    for (int k = 0; k < n && k < WATCHED; k++) {
        const Watch *w = &table[(n - 1 - k) % WATCHED];
        if (at < w->start || at >= w->end)
            continue;
        if (__atomic_exchange_n(&claimed, 1, __ATOMIC_SEQ_CST))
            for (;;)                                    /* two threads met the vanished pages at once */
                pause();                                /* (stats on two cores): one line, then _exit */
        if (have_saved) {
            struct termios now;
            if (tcgetattr(0, &now) == 0 && memcmp(&now, &saved, sizeof now) != 0) {
                tcsetattr(0, TCSANOW, &saved);          /* the browser had the terminal raw */
                if (isatty(2)) {
                    ssize_t r = write(2, RESET, sizeof RESET - 1);
                    (void) r;
                }
            }
        }
        ssize_t r = write(2, w->msg, w->len);
        (void) r;
        _exit(2);
    }
    sigaction(sig, &previous, NULL);                    /* not a watched map: as before */
}

static PyObject *install(PyObject *self, PyObject *unused) {
    (void) self; (void) unused;
    static int done = 0;
    if (done)
        Py_RETURN_NONE;
    if (isatty(0) && tcgetattr(0, &saved) == 0)
        have_saved = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;       /* not SA_RESETHAND: a second thread's fault meanwhile
                                                       would take the default action, a bare signal */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &previous) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    done = 1;
    Py_RETURN_NONE;
}

static PyObject *watch(PyObject *self, PyObject *args) {
    (void) self;
    unsigned long long start, size;
    const char *msg;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "KKy#", &start, &size, &msg, &len))
        return NULL;
    int n = count;
    Watch *w = &table[n % WATCHED];
    w->end = 0;                                         /* never half-written while live */
    w->start = (uintptr_t) start;
    w->len = (size_t) (len < MESSAGE ? len : MESSAGE);
    memcpy(w->msg, msg, w->len);
    w->end = (uintptr_t) (start + size);
    count = n + 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, "Turn SIGBUS on a watched map into its message and exit status 2."},
    {"watch", watch, METH_VARARGS, "watch(address, size, message): record a mapping and its message."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_guard", NULL, -1, methods};

PyMODINIT_FUNC PyInit__guard(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "WATCHED", WATCHED) < 0) {     /* how many maps stay watched */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* pynames.c — names a Python package exported by `kevo export --torch` must
 * not take: Python's keywords, the modules of its standard library (Python
 * 3.11's sys.stdlib_module_names without the private ones) and well-known
 * distributions a model's environment holds (an `import {name}` of the
 * package would shadow them, or theirs it).  Compared case-insensitively,
 * '-' as '_' (pip's normalisation). */
#include "export/export.h"
#include "export/export_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const xp_py_taken[] = {
    "abc", "accelerate", "aifc", "and", "antigravity", "apex", "argparse", "array", "as", "assert", "ast", "async",
    "asynchat", "asyncio", "asyncore", "atexit", "attrs", "audioop", "await", "base64", "bdb", "binascii", "bisect",
    "boto3", "botocore", "break", "build", "builtins", "bz2", "calendar", "certifi", "cgi", "cgitb",
    "charset_normalizer", "chunk", "class", "click", "cmath", "cmd", "code", "codecs", "codeop", "collections",
    "colorsys", "compileall", "concurrent", "conda", "configparser", "contextlib", "contextvars", "continue", "copy",
    "copyreg", "cprofile", "crypt", "cryptography", "csv", "ctypes", "cuda", "cupy", "curses", "cython",
    "dataclasses", "datetime", "dbm", "decimal", "def", "del", "difflib", "dis", "distutils", "doctest", "docutils",
    "einops", "elif", "else", "email", "encodings", "ensurepip", "enum", "errno", "except", "false", "faulthandler",
    "fbgemm_gpu", "fcntl", "filecmp", "fileinput", "filelock", "finally", "flash_attn", "fnmatch", "for", "fractions",
    "from", "fsspec", "ftplib", "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "global",
    "google", "graphlib", "grp", "grpc", "gzip", "hashlib", "heapq", "hmac", "html", "http", "huggingface_hub",
    "idlelib", "idna", "if", "imaplib", "imghdr", "imp", "import", "importlib", "in", "inspect", "io", "ipaddress",
    "is", "itertools", "jax", "jaxlib", "jinja2", "json", "keras", "kevo", "keyword", "lambda", "lib2to3",
    "lightning", "linecache", "locale", "logging", "lzma", "mailbox", "mailcap", "markupsafe", "marshal", "math",
    "matplotlib", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt", "multiprocessing", "netrc", "networkx",
    "nis", "nntplib", "none", "nonlocal", "not", "nt", "ntpath", "nturl2path", "numbers", "numpy", "nvidia", "onnx",
    "onnxruntime", "opcode", "operator", "optparse", "or", "os", "ossaudiodev", "packaging", "pandas", "pass",
    "pathlib", "pdb", "pickle", "pickletools", "pil", "pillow", "pip", "pipes", "pkg_resources", "pkgutil",
    "platform", "plistlib", "poplib", "posix", "posixpath", "pprint", "profile", "protobuf", "pstats", "psutil",
    "pty", "pwd", "py_compile", "pybind11", "pyclbr", "pydantic", "pydoc", "pydoc_data", "pyexpat", "pytest",
    "pytorch_lightning", "pyyaml", "queue", "quopri", "raise", "random", "re", "readline", "reprlib", "requests",
    "resource", "return", "rich", "rlcompleter", "runpy", "safetensors", "sched", "scikit_learn", "scipy", "secrets",
    "select", "selectors", "setuptools", "shelve", "shlex", "shutil", "signal", "site", "six", "sklearn", "smtpd",
    "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse",
    "ssl", "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "sympy", "symtable", "sys",
    "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "tensorflow", "termios", "textwrap",
    "this", "threading", "time", "timeit", "tkinter", "token", "tokenize", "tokenizers", "tomli", "tomllib", "torch",
    "torchaudio", "torchvision", "tqdm", "trace", "traceback", "tracemalloc", "transformers", "triton", "true", "try",
    "tty", "turtle", "turtledemo", "types", "typing", "typing_extensions", "unicodedata", "unittest", "urllib",
    "urllib3", "uu", "uuid", "venv", "virtualenv", "warnings", "wave", "weakref", "webbrowser", "wheel", "while",
    "winreg", "winsound", "with", "wsgiref", "xdrlib", "xformers", "xml", "xmlrpc", "yaml", "yield", "zipapp",
    "zipfile", "zipimport", "zlib", "zoneinfo",
};

static int xp_py_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool xp_py_name_taken(const char *name)
{
    char norm[128];
    size_t n = strlen(name);
    if (n >= sizeof norm)
        return false;
    for (size_t i = 0; i <= n; i++)
        norm[i] = name[i] == '-' ? '_' : (char)tolower((unsigned char)name[i]);
    const char *key = norm;
    return bsearch(&key, xp_py_taken, sizeof xp_py_taken / sizeof xp_py_taken[0], sizeof xp_py_taken[0],
                   xp_py_cmp) != NULL;
}

kevo_status kevo_export_check_torch_name(const char *name, kevo_err *err)
{
    if (xp_py_name_taken(name))
        return kevo_err_set(err, KEVO_ERR_ARG,
                            "--torch: '%s' cannot name a Python package: it is a keyword, a module of Python's "
                            "standard library or a well-known distribution it would shadow; give another --name",
                            name);
    return KEVO_OK;
}

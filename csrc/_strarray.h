/* A string array as ggscope's parser lays it out: a prefix-length (or length) array of
   1, 2, 4 or 8-byte unsigned integers.  Shared by _cjson.c, _cvocab.c and _cscan.c, which read
   the same layout. */
#ifndef GGSCOPE_STRARRAY_H
#define GGSCOPE_STRARRAY_H
#include <Python.h>
#include <stdint.h>

/* element ``i`` of an array of ``size``-byte unsigned integers */
static inline uint64_t item(const void *p, Py_ssize_t size, Py_ssize_t i) {
    switch (size) {
        case 1: return ((const uint8_t *) p)[i];
        case 2: return ((const uint16_t *) p)[i];
        case 4: return ((const uint32_t *) p)[i];
        default: return ((const uint64_t *) p)[i];
    }
}

/* whether ``s`` is an element size ``item`` reads */
static inline int good_size(Py_ssize_t s) { return s == 1 || s == 2 || s == 4 || s == 8; }

#endif

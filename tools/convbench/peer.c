/*
 * peer.c -- the libraries --peer can time side by side with libconv, in the
 * same process, on the same layers, with the same timing policy.
 *
 * Adding a peer: write peer_NAME.c with open/describe/run/close (see
 * cb_peer in convbench.h), add one row below, and build the file where the
 * library is found (CMakeLists.txt). A peer that is not built keeps its row
 * with NULL functions, so `--peer NAME` can say how to get it.
 */
#include <string.h>

#include "convbench.h"

#ifdef CB_HAVE_ONEDNN
int cb_onednn_open(const cb_bench *b, char *err, size_t errlen);
void cb_onednn_describe(const cb_bench *b, char *buf, size_t len);
void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times,
                   cb_row *r);
void cb_onednn_close(void);
#define CB_ONEDNN_FNS cb_onednn_open, cb_onednn_describe, cb_onednn_run, cb_onednn_close
#else
#define CB_ONEDNN_FNS NULL, NULL, NULL, NULL
#endif

const cb_peer cb_peers[] = {
    {"onednn",
     "oneDNN's convolution primitive (f32 only: f64 rows are\n"
     "                   n/a). Fair to oneDNN: src/weights/dst use format_tag any,\n"
     "                   so oneDNN picks its preferred (blocked) layouts, and only\n"
     "                   the primitive's execution is timed, not the reorders from\n"
     "                   plain layouts (\"oneDNN, primitive only\"); algorithm auto,\n"
     "                   forward_training, no bias, user scratchpad allocated\n"
     "                   before timing, as many OpenMP threads as libconv's context.\n"
     "                   On a machine busy with other work, OpenMP threads that\n"
     "                   spin at barriers can multiply oneDNN's times: there run\n"
     "                   with OMP_WAIT_POLICY=passive (the header shows the policy).",
     CB_ONEDNN_FNS,
     "convbench was built without oneDNN: install it (Debian/Ubuntu: libdnnl-dev) and\n"
     "re-run cmake; convbench finds it by itself (dnnl.h and libdnnl)"},
};
const int cb_n_peers = (int)(sizeof cb_peers / sizeof cb_peers[0]);

const cb_peer *cb_find_peer(const char *name)
{
    for (int i = 0; i < cb_n_peers; i++)
        if (strcmp(cb_peers[i].name, name) == 0)
            return &cb_peers[i];
    return NULL;
}

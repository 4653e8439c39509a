/*
 * peer.c -- the libraries --peer can time side by side with libconv, in the
 * same process, on the same layers, with the same timing policy.
 *
 * Adding a peer: write peer_NAME.c with open/describe/run/close (see
 * cb_peer in convbench.h) and add one row below. A peer is always built and
 * loads its library at run time (as peer_onednn.c does), so that `--peer
 * NAME` on a machine without it can say how to get it.
 */
#include <string.h>

#include "convbench.h"

int cb_onednn_open(const cb_bench *b, char *err, size_t errlen);
void cb_onednn_describe(const cb_bench *b, char *buf, size_t len);
void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times,
                   cb_row *r);
void cb_onednn_close(void);

const cb_peer cb_peers[] = {
    {"onednn",
     "oneDNN 3.x's convolution primitive, loaded at run time from\n"
     "                   libdnnl.so.3 (see --peer-lib; scripts/onednn.sh fetches\n"
     "                   oneDNN 3.2 from PyPI). f32, and bf16 (oneDNN's bf16\n"
     "                   kernels, f32 accumulation); f64 and f16 rows are n/a.\n"
     "                   Fair to oneDNN: src/weights/dst use format_tag any,\n"
     "                   so oneDNN picks its preferred (blocked) layouts, and only\n"
     "                   the primitive's execution is timed, not the reorders from\n"
     "                   plain layouts (\"oneDNN, primitive only\"; --peer-reorders\n"
     "                   times them too); algorithm auto,\n"
     "                   forward_training, no bias, user scratchpad allocated\n"
     "                   before timing, as many OpenMP threads as libconv's context.\n"
     "                   On a machine busy with other work, OpenMP threads that\n"
     "                   spin at barriers can multiply oneDNN's times: there run\n"
     "                   with OMP_WAIT_POLICY=passive (the header shows the policy).\n"
     "                   --json rows name oneDNN's implementation (peer_impl) and\n"
     "                   count the timed reorders (peer_reorders).",
     cb_onednn_open, cb_onednn_describe, cb_onednn_run, cb_onednn_close},
};
const int cb_n_peers = (int)(sizeof cb_peers / sizeof cb_peers[0]);

const cb_peer *cb_find_peer(const char *name)
{
    for (int i = 0; i < cb_n_peers; i++)
        if (strcmp(cb_peers[i].name, name) == 0)
            return &cb_peers[i];
    return NULL;
}

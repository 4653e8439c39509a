#include "dispatch/lowering.h"

namespace conv::dispatch {

Lowered lower(conv_op_t op, const ConvGeometry &g) {
    if (!g.transposed) return {op, g};
    ConvGeometry inner = g;
    inner.activation = CONV_ACTIVATION_NONE;
    switch (op) {
    case CONV_OP_FORWARD: return {CONV_OP_BACKWARD_DATA, inner};
    case CONV_OP_BACKWARD_DATA: return {CONV_OP_FORWARD, inner};
    default: return {CONV_OP_BACKWARD_FILTER, inner};
    }
}

Operands lower_operands(const Pass &pass, bool transposed) {
    void *bias = pass.bias ? pass.bias->data() : nullptr;
    if (!transposed) return {pass.x->data(), pass.w->data(), pass.y->data(), bias, nullptr};
    return {pass.y->data(), pass.w->data(), pass.x->data(), bias, nullptr};
}

}  // namespace conv::dispatch

/* launch.c — see launch.h. */
#include "runtime/core/launch.h"

#include "platform/os/log.h"

tandem_status tandem_launch(tandem_stream *s, tandem_kernel_id id, const void *args,
                            size_t args_size) {
    if ((int)id < 0 || id >= TANDEM_KERNEL_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "launch: kernel id %d is not in the registry (0..%d)",
                           (int)id, TANDEM_KERNEL_COUNT - 1);
    const tandem_kernel_info *k = &tandem_kernel_table[id];
    if (!s || !s->dev || !s->dev->ops)
        return tandem_fail(TANDEM_E_INVALID, "launch %s: stream is NULL or has no device", k->name);
    if (!args)
        return tandem_fail(TANDEM_E_INVALID, "launch %s: argument struct is NULL", k->name);
    if (args_size != k->args_size)
        return tandem_fail(TANDEM_E_INVALID,
                           "launch %s: argument struct is %zu bytes, the registry expects %zu",
                           k->name, args_size, k->args_size);
    if (!s->dev->ops->launch)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "launch %s: the %s backend cannot launch kernels",
                           k->name, s->dev->ops->name);
    tandem_launch_dims dims;
    k->geom(args, &dims);
    return s->dev->ops->launch(s, (int)id, &dims, args, args_size);
}

#include <stdio.h>
#include "tensorplan/planner.h"

int main(void)
{
    /* size in bytes, first and last node that uses the tensor (inclusive) */
    tp_tensor_lifetime t[] = {{100, 0, 1}, {80, 1, 2}, {60, 2, 3}};
    size_t offsets[3], arena, peak;
    if (tp_plan_offsets(t, 3, offsets, &arena) != TP_OK ||
        tp_peak_live_bytes(t, 3, &peak) != TP_OK) {
        fprintf(stderr, "refused: %s\n", tp_last_error());
        return 1;
    }
    for (int i = 0; i < 3; i++)
        printf("tensor %d at offset %zu\n", i, offsets[i]); /* 0, 100, 0 */
    printf("arena %zu bytes, peak %zu bytes\n", arena, peak); /* 180, 180 */
    return 0;
}

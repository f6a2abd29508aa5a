// A C++ program built against an installed tensorplan only (scripts/check_install.sh): it
// reads a MiniMalloc problem from memory, plans it with the portfolio, and checks the
// offsets against the ones worked out by hand in docs/planner.md's leading-gap case.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <tensorplan/csv.h>
#include <tensorplan/planner.h>
#include <tensorplan/status.h>
#include <tensorplan/version.h>

int main()
{
    const std::string csv = "id,lower,upper,size\na,0,2,100\nb,1,3,80\nc,2,4,60\n";
    tp_csv_table table;
    if (tp_csv_parse("inline.csv", csv.data(), csv.size(), 0, &table) != TP_OK) {
        std::fprintf(stderr, "refused: %s\n", tp_last_error());
        return 1;
    }
    tp_plan_options options;
    tp_plan_options_init(&options);
    options.strategy = TP_PLAN_PORTFOLIO;
    options.threads = 1;
    std::vector<size_t> offsets(table.count);
    size_t arena = 0;
    tp_status st = tp_plan_offsets_ex(table.tensors, table.count, &options, offsets.data(),
                                      &arena, nullptr);
    // a [0,2) and c [2,4) never meet, so c reuses a's bytes; b sits above a.
    const size_t expected[] = {0, 100, 0};
    bool ok = st == TP_OK && table.count == 3 && arena == 180;
    for (size_t i = 0; ok && i < 3; i++)
        ok = offsets[i] == expected[i];
    for (size_t i = 0; i < table.count; i++)
        std::printf("%s %zu\n", table.ids[i], offsets[i]);
    std::printf("arena %zu\nversion %s\n", arena, tp_version());
    ok = ok && std::strcmp(tp_version(), TP_VERSION_STRING) == 0;
    tp_csv_free(&table);
    return ok ? 0 : 1;
}

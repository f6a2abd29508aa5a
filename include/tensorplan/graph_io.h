/* tensorplan: graph files. The graph JSON format of docs/graph.md ("Graph JSON";
 * "tensorplan-graph", version 1) and a Graphviz DOT rendering. Part of the formats layer
 * (src/formats).
 *
 * Example:
 *
 *     tp_graph *graph;
 *     char *dot;
 *     if (tp_graph_load_json("graph.json", &graph) != TP_OK)
 *         return 1;                                  // "graph.json: nodes[7].src[0]: ..."
 *     tp_status st = tp_graph_to_dot(graph, &dot);
 *     if (st == TP_OK) {
 *         fputs(dot, stdout);
 *         free(dot);
 *         st = tp_graph_save_json(graph, "copy.json");
 *     }
 *     tp_graph_destroy(graph);
 *     return st == TP_OK ? 0 : 1;
 */
#ifndef TENSORPLAN_GRAPH_IO_H
#define TENSORPLAN_GRAPH_IO_H

#include <stddef.h>

#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses a graph file's text. `source` names the text in messages (a file name). A malformed
 * text is refused with TP_ERR_INVALID and a message "SOURCE: PATH: expected ..., got ...",
 * e.g. "g.json: nodes[7].src[0]: expected a node id smaller than 7, got 9", or
 * "SOURCE: line L, column C: ..." for a syntax error. The graph read is validated
 * (tp_graph_validate); node keys the format does not define, and unknown top-level keys, are
 * kept in node->extra and graph->extra. The caller destroys *out. */
TP_API tp_status tp_graph_parse_json(const char *text, size_t len, const char *source,
                                     tp_graph **out);
/* Reads and parses a file (TP_ERR_IO if it cannot be read). */
TP_API tp_status tp_graph_load_json(const char *path, tp_graph **out);

/* The JSON text of a graph: one node per line, deterministic, every parameter that differs
 * from tp_node_init's neutral value, extra keys after the format's own. Refuses a graph that
 * fails tp_graph_check or has a source id not smaller than its node's (the file could not be
 * read back). *out is NUL-terminated; the caller frees it with free(). */
TP_API tp_status tp_graph_to_json(const tp_graph *graph, char **out);
/* Writes the JSON text to a file; nothing is written when the graph is refused. */
TP_API tp_status tp_graph_save_json(const tp_graph *graph, const char *path);

/* Graphviz DOT: nodes filled by backend colour, inputs and outputs drawn with their own
 * shapes, nodes without a consumer (dead) dashed, a dotted edge from each layer's kv_store to
 * its kv_load (state, not a source), and a legend. */
TP_API tp_status tp_graph_to_dot(const tp_graph *graph, char **out);
TP_API tp_status tp_graph_save_dot(const tp_graph *graph, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_GRAPH_IO_H */

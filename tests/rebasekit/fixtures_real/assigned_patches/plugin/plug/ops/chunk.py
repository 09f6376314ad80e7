def chunk_gated_delta_rule(q, k, v, scale=None, **options):
    return q

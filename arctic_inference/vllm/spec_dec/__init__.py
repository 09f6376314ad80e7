"""The Arctic speculator: MLP and LSTM draft heads, their proposer and the hybrid with suffix decoding."""

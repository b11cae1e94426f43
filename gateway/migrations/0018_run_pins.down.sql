DROP TABLE run_pins;

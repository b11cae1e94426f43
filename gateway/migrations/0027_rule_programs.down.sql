DROP TABLE rule_programs;

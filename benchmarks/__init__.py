"""Measuring tools that drive the engine from outside it (servers, browsers, several processes); not part of bench/."""

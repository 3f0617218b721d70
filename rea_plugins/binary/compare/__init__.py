"""The compare room: two answers side by side. Two function dossiers, two versions of a binary, the procedures
most like one, and two providers' answers on one target."""

pub mod sbpl;
